"""A small builder for Sluice pipelines, and the writer of Triton model folders.

The builder knows the operators' arguments as docs/pipelines.md defines them and
tracks the tensor's shape as it goes, so the model's config.pbtxt can state the
output's static dims (Triton batches outputs, so they must be static).
"""

import math
import os
import pathlib

ONE_255 = 1.0 / 255.0

# torch's uint8 tensor resize (torchvision.transforms.v2.functional.resize of a
# uint8 tensor), the Pillow filter it stands beside -> Sluice's interp.
TORCH_INTERPS = {"linear": "torch_linear", "cubic": "torch_cubic"}
# The interps that are not Pillow's filters -> whose they are.
NOT_PILLOW = {"opencv_linear": "OpenCV's", **{v: "torch's" for v in TORCH_INTERPS.values()}}
INTERPS = ("nearest", "linear", "cubic", "area", *NOT_PILLOW)
COLORS = {"RGB": 3, "BGR": 3, "GRAY": 1, "RGBA": 4, "BGRA": 4}
DTYPES = {"FP32": "TYPE_FP32", "FP16": "TYPE_FP16", "UINT8": "TYPE_UINT8"}
ROUNDINGS = ("half_even", "floor")


class ExportError(ValueError):
    """A transform that the exporter cannot express exactly, or a bad argument.
    The message names the transform (or argument) and why."""


def _fmt_float(x):
    x = float(x)
    if not math.isfinite(x):
        raise ExportError(f"non-finite number {x!r} in a pipeline argument")
    r = repr(x)
    return r


def _fmt(value):
    if isinstance(value, bool):
        return f"bool: {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"int: {value}"
    if isinstance(value, float):
        return f"float: {_fmt_float(value)}"
    if isinstance(value, str):
        return f'str: "{value}"'
    raise TypeError(value)


def _fmt_list(kind, values):
    body = ", ".join(str(int(v)) if kind == "ints" else _fmt_float(v) for v in values)
    return f"{kind} {{ v: [{body}] }}"


class Node:
    def __init__(self, op, args, name=None, comment=None):
        self.op, self.args, self.name, self.comment = op, args, name, comment

    def text(self):
        lines = ["node {", f'  op: "{self.op}"']
        if self.name and self.name != self.op:
            lines.insert(1, f'  name: "{self.name}"')
        for k, (kind, v) in self.args.items():
            val = _fmt_list(kind, v) if kind in ("ints", "floats") else _fmt(v)
            lines.append(f'  arg {{ name: "{k}" {val} }}')
        lines.append("}")
        if self.comment:
            lines.insert(0, "# " + self.comment)
        return "\n".join(lines)


class Pipeline:
    """A linear chain: decode, geometry (resize, crop, pad, letterbox), normalize.

    Each method appends one node with the arguments of docs/pipelines.md and
    returns the pipeline, so calls chain. Arguments left as None are left out
    (the operator's default applies)."""

    def __init__(self, name="pipeline", input_name="IMAGE", output_name="PIXELS"):
        self.name = name
        self.input_name = input_name
        self.output_name = output_name
        self.nodes = []
        self.notes = []  # what the export assumed: printed and written as comments
        self.hw = None  # static (h, w) of the current image, None if per-sample
        self.channels = None
        self.out_dtype = None  # set by normalize
        self.out_layout = None
        self.side_outputs = []  # (name, source, dtype, dims)
        self._letterbox = False

    # ------------------------------------------------------------ operators

    def _add(self, op, args, comment=None):
        if op != "decode" and not self.nodes:
            raise ExportError(f"{op}: a pipeline starts with decode")
        if self.out_dtype is not None:
            raise ExportError(f"{op}: normalize must be the last node")
        self.nodes.append(Node(op, args, comment=comment))
        return self

    def decode(self, color="RGB", orient=None, background=None, dct_scale=None, cmyk=None,
               jpeg_fancy_upsampling=None, comment=None):
        if self.nodes:
            raise ExportError("decode: only one decode, first")
        if color not in COLORS:
            raise ExportError(f"decode: color {color!r} is not one of {', '.join(COLORS)}")
        args = {"color": ("str", color)}
        if orient is not None:
            args["orient"] = ("bool", bool(orient))
        if background is not None:
            bg = [int(v) for v in background]
            if len(bg) != 3 or any(not 0 <= v <= 255 for v in bg):
                raise ExportError(f"decode: background must be 3 ints 0-255, got {background!r}")
            if color not in ("RGB", "BGR", "GRAY"):
                raise ExportError(f"decode: background needs color RGB, BGR or GRAY, not {color}")
            args["background"] = ("ints", bg)
        if dct_scale is not None:
            args["dct_scale"] = ("bool", bool(dct_scale))
        if cmyk is not None:
            if cmyk not in ("pillow", "opencv"):
                raise ExportError(f"decode: cmyk must be 'pillow' or 'opencv', got {cmyk!r}")
            args["cmyk"] = ("str", cmyk)
        if jpeg_fancy_upsampling is not None:
            args["jpeg_fancy_upsampling"] = ("bool", bool(jpeg_fancy_upsampling))
        self.channels = COLORS[color]
        return self._add("decode", args, comment)

    def _interp_args(self, op, interp, antialias):
        if interp not in INTERPS:
            raise ExportError(f"{op}: interp {interp!r} is not one of {', '.join(INTERPS)}")
        if interp == "opencv_linear" and antialias:
            raise ExportError(f"{op}: antialias true does not go with interp opencv_linear (OpenCV's INTER_LINEAR never antialiases)")
        args = {"interp": ("str", interp)}
        if antialias is not None and interp != "opencv_linear":
            args["antialias"] = ("bool", bool(antialias))
        return args

    def resize(self, size=None, shorter=None, longer=None, max_size=None, interp="linear", antialias=None,
               source_mode=False, comment=None):
        given = [k for k, v in (("size", size), ("shorter", shorter), ("longer", longer)) if v is not None]
        if len(given) != 1:
            raise ExportError(f"resize: exactly one of size, shorter and longer, got {given or 'none'}")
        args = {}
        if size is not None:
            h, w = _pair("resize: size", size)
            args["size"] = ("ints", [h, w])
            self.hw = (h, w)
        elif shorter is not None:
            args["shorter"] = ("int", _side("resize: shorter", shorter))
            self.hw = None
        else:
            args["longer"] = ("int", _side("resize: longer", longer))
            self.hw = None
        if max_size is not None:
            if shorter is None:
                raise ExportError("resize: max_size applies only with shorter")
            if max_size <= shorter:
                raise ExportError(f"resize: max_size {max_size} must be larger than shorter {shorter}")
            args["max_size"] = ("int", _side("resize: max_size", max_size))
        args.update(self._interp_args("resize", interp, antialias))
        self._add("resize", args, comment)
        return self.source_mode() if source_mode else self

    def source_mode(self):
        """Sets source_mode on the resize directly after decode: it resamples each image as Pillow
        does in the mode Image.open gives it (P and 1 NEAREST, RGBA and LA premultiplied, CMYK as
        inks), then converts to the decoded colour, as Image.open(f).resize(...).convert("RGB")
        (or "L", "RGBA")."""
        if len(self.nodes) < 2 or self.nodes[1].op != "resize":
            raise ExportError("resize source_mode: needs the resize directly after decode")
        dec = self.nodes[0].args
        if "background" in dec or dec.get("cmyk", ("str", "pillow"))[1] != "pillow":
            raise ExportError("resize source_mode: needs a decode with no background, cmyk pillow")
        interp = self.nodes[1].args["interp"][1]
        if interp in NOT_PILLOW:
            raise ExportError(f"resize source_mode: follows Pillow, and interp {interp} is {NOT_PILLOW[interp]}")
        self.nodes[1].args["source_mode"] = ("bool", True)
        return self

    def crop(self, size=None, roi=None, rounding=None, fill=None, comment=None):
        if (size is None) == (roi is None):
            raise ExportError("crop: exactly one of size and roi")
        args = {}
        if size is not None:
            h, w = _pair("crop: size", size)
            args["size"] = ("ints", [h, w])
            if rounding is not None:
                if rounding not in ROUNDINGS:
                    raise ExportError(f"crop: rounding {rounding!r} is not one of {', '.join(ROUNDINGS)}")
                args["rounding"] = ("str", rounding)
        else:
            if rounding is not None:
                raise ExportError("crop: rounding applies only to size (centre) crops")
            r = [int(v) for v in roi]
            if len(r) != 4 or r[2] < 1 or r[3] < 1:
                raise ExportError(f"crop: roi is [top, left, height, width] with height and width >= 1, got {roi!r}")
            args["roi"] = ("ints", r)
            h, w = r[2], r[3]
        if fill is not None:
            args["fill"] = ("floats", _fill("crop", fill))
        self.hw = (h, w)
        return self._add("crop", args, comment)

    def pad(self, size=None, multiple=None, align=None, fill=None, comment=None):
        if (size is None) == (multiple is None):
            raise ExportError("pad: exactly one of size and multiple")
        args = {}
        if size is not None:
            h, w = _pair("pad: size", size)
            args["size"] = ("ints", [h, w])
            self.hw = (h, w)
        else:
            args["multiple"] = ("int", _side("pad: multiple", multiple))
            self.hw = None
        if align is not None:
            if align not in ("top_left", "center"):
                raise ExportError(f"pad: align {align!r} is not top_left or center")
            args["align"] = ("str", align)
        if fill is not None:
            args["fill"] = ("floats", _fill("pad", fill))
        return self._add("pad", args, comment)

    def letterbox(self, size, fill=None, scaleup=None, interp="linear", antialias=None, side_outputs=True, comment=None):
        h, w = _pair("letterbox: size", size)
        args = {"size": ("ints", [h, w])}
        if fill is not None:
            args["fill"] = ("floats", _fill("letterbox", fill))
        if scaleup is not None:
            args["scaleup"] = ("bool", bool(scaleup))
        args.update(self._interp_args("letterbox", interp, antialias))
        self.hw = (h, w)
        self._add("letterbox", args, comment)
        if side_outputs:
            self.side_outputs = [
                ("SCALE", "letterbox:scale", "FP32", [1]),
                ("OFFSET", "letterbox:offset", "FP32", [2]),
            ]
        return self

    def normalize(self, scale=None, mean=None, std=None, layout="CHW", dtype="FP32", order=None, comment=None):
        if layout not in ("CHW", "HWC"):
            raise ExportError(f"normalize: layout {layout!r} is not CHW or HWC")
        if dtype not in DTYPES:
            raise ExportError(f"normalize: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        args = {}
        if scale is not None:
            args["scale"] = ("float", float(scale))
        for k, v in (("mean", mean), ("std", std)):
            if v is not None:
                vals = [float(x) for x in (v if _is_seq(v) else [v])]
                if len(vals) not in (1, self.channels):
                    raise ExportError(f"normalize: {k} has {len(vals)} values for a {self.channels}-channel image")
                if k == "std" and any(x < 1e-12 for x in vals):
                    raise ExportError(f"normalize: std must be at least 1e-12, got {vals}")
                args[k] = ("floats", vals)
        args["layout"] = ("str", layout)
        args["dtype"] = ("str", dtype)
        if order is not None:
            if order not in ("keep", "RGB", "BGR"):
                raise ExportError(f"normalize: order {order!r} is not keep, RGB or BGR")
            args["order"] = ("str", order)
            if order != "keep" and self.channels == 4:
                self.channels = 3
        self._add("normalize", args, comment)
        self.out_dtype, self.out_layout = dtype, layout
        return self

    # ------------------------------------------------------------ output

    def note(self, text):
        self.notes.append(text)
        return self

    def output_dims(self):
        if self.hw is None:
            raise ExportError(
                "the pipeline's output has a per-image size, and a Triton output needs a static one: "
                "end with resize size, crop, pad size or letterbox")
        if self.out_dtype is None:
            raise ExportError("the pipeline must end with normalize (it lays the image out as a tensor)")
        h, w = self.hw
        c = self.channels
        return [c, h, w] if self.out_layout == "CHW" else [h, w, c]

    def outputs(self):
        return [(self.output_name, None, self.out_dtype, self.output_dims())] + list(self.side_outputs)

    def text(self):
        out = []
        for n in self.notes:
            out += ["# " + line for line in n.splitlines()]
        out += ["version: 1", f'name: "{self.name}"', "", f'input {{ name: "{self.input_name}" }}', ""]
        out += [n.text() for n in self.nodes]
        out.append("")
        for name, source, dtype, dims in self.outputs():
            src = f' source: "{source}"' if source else ""
            if source is None and self.side_outputs:
                src = f' source: "{self.nodes[-1].op}"'
            out.append(f'output {{ name: "{name}"{src} dtype: "{dtype}" dims: [{", ".join(map(str, dims))}] }}')
        return "\n".join(out) + "\n"


def _is_seq(v):
    return isinstance(v, (list, tuple)) or hasattr(v, "tolist")


def _side(what, v):
    if isinstance(v, bool) or int(v) != v or not 1 <= int(v) <= 65536:
        raise ExportError(f"{what} must be an int 1..65536, got {v!r}")
    return int(v)


def _pair(what, v):
    if not _is_seq(v):
        v = (v, v)
    v = list(v.tolist() if hasattr(v, "tolist") else v)
    if len(v) == 1:
        v = v * 2
    if len(v) != 2:
        raise ExportError(f"{what} must be [height, width], got {v!r}")
    return _side(what, v[0]), _side(what, v[1])


def _fill(op, fill):
    vals = [float(x) for x in (fill if _is_seq(fill) else [fill])]
    if len(vals) not in (1, 3, 4) or any(not 0 <= x <= 255 for x in vals):
        raise ExportError(f"{op}: fill must be 1, 3 or 4 values 0..255, got {fill!r}")
    return vals


# ------------------------------------------------------------------ model folders


def config_text(name, pipeline, max_batch_size=64, instance_kind="KIND_CPU"):
    """config.pbtxt of a Sluice model, as model_repository/preprocess_imagenet has it."""
    outs = []
    for oname, _src, dtype, dims in pipeline.outputs():
        outs.append(f'  {{ name: "{oname}", data_type: {DTYPES[dtype]}, dims: [ {", ".join(map(str, dims))} ] }}')
    return (
        f"# Written by sluice_export; the pipeline is 1/pipeline.pbtxt.\n"
        f'name: "{name}"\n'
        f'backend: "sluice"\n'
        f"max_batch_size: {int(max_batch_size)}\n"
        f"input [\n"
        f'  {{ name: "{pipeline.input_name}", data_type: TYPE_UINT8, dims: [ -1 ], allow_ragged_batch: true }}\n'
        f"]\n"
        f"output [\n" + ",\n".join(outs) + "\n]\n"
        f"dynamic_batching {{ max_queue_delay_microseconds: 2000 }}\n"
        f"instance_group [ {{ kind: {instance_kind}, count: 1 }} ]\n"
    )


def ensemble_text(name, preprocess, pipeline, model, model_input=None, model_outputs=None, max_batch_size=64):
    """config.pbtxt of an ensemble: the Sluice model, then `model`.

    model_outputs: [(name, dtype, dims)] of the downstream model; left out,
    one placeholder output is written and must be edited to the model's."""
    pix = pipeline.output_name
    model_input = model_input or pix
    todo = ""
    if not model_outputs:
        model_outputs = [("OUTPUT", "FP32", [-1])]
        todo = "  # EDIT: the downstream model's real output name, type and dims\n"
    outs = ", ".join(f'{{ name: "{o}", data_type: {DTYPES.get(t, "TYPE_" + t)}, dims: [ {", ".join(map(str, d))} ] }}'
                     for o, t, d in model_outputs)
    omap = "\n".join(f'        output_map {{ key: "{o}", value: "{o}" }}' for o, _t, _d in model_outputs)
    return (
        f"# Written by sluice_export: encoded image in, {model}'s outputs out.\n"
        f'name: "{name}"\n'
        f'platform: "ensemble"\n'
        f"max_batch_size: {int(max_batch_size)}\n"
        f'input [ {{ name: "{pipeline.input_name}", data_type: TYPE_UINT8, dims: [ -1 ] }} ]\n'
        f"{todo}"
        f"output [ {outs} ]\n"
        f"ensemble_scheduling {{\n"
        f"  step [\n"
        f"    {{\n"
        f'      model_name: "{preprocess}"\n'
        f"      model_version: -1\n"
        f'      input_map {{ key: "{pipeline.input_name}", value: "{pipeline.input_name}" }}\n'
        f'      output_map {{ key: "{pix}", value: "pixels" }}\n'
        f"    }},\n"
        f"    {{\n"
        f'      model_name: "{model}"\n'
        f"      model_version: -1\n"
        f'      input_map {{ key: "{model_input}", value: "pixels" }}\n'
        f"{omap}\n"
        f"    }}\n"
        f"  ]\n"
        f"}}\n"
    )


def ensemble_name(name):
    return "ensemble_" + name[len("preprocess_"):] if name.startswith("preprocess_") else name + "_ensemble"


def write_model(pipeline, out_dir, name=None, max_batch_size=64, ensemble_with=None, ensemble_name_=None,
                model_input=None, model_outputs=None):
    """Writes <out_dir>/config.pbtxt and <out_dir>/1/pipeline.pbtxt, and with
    ensemble_with an ensemble folder beside it. Returns the paths written."""
    out_dir = pathlib.Path(out_dir)
    name = name or out_dir.name
    pipeline.name = name
    if not 1 <= int(max_batch_size) <= 65536:
        raise ExportError(f"max_batch_size must be 1..65536, got {max_batch_size}")
    text = pipeline.text()
    cfg = config_text(name, pipeline, max_batch_size)
    (out_dir / "1").mkdir(parents=True, exist_ok=True)
    written = [out_dir / "config.pbtxt", out_dir / "1" / "pipeline.pbtxt"]
    written[0].write_text(cfg)
    written[1].write_text(text)
    # A stale compact form would disagree with the new text and fail the load.
    stale = out_dir / "1" / "model.sluice"
    if stale.exists():
        os.remove(stale)
    if ensemble_with:
        ename = ensemble_name_ or ensemble_name(name)
        edir = out_dir.parent / ename
        (edir / "1").mkdir(parents=True, exist_ok=True)
        (edir / "1" / ".gitkeep").touch()
        p = edir / "config.pbtxt"
        p.write_text(ensemble_text(ename, name, pipeline, ensemble_with, model_input, model_outputs, max_batch_size))
        written.append(p)
    return written
