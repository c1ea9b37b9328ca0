"""python -m sluice_export export SOURCE -o MODEL_DIR [options]

One source:
  --torchvision-pickle FILE   a pickled torchvision/open_clip Compose or weights preset (torch.save of
                              weights.transforms()); needs torch
  --timm-config FILE.json     timm's resolve_data_config output or a model's pretrained_cfg, as JSON
  --transformers PATH|JSON    a preprocessor_config.json, its folder, or its JSON text
  --ultralytics SETTINGS      LetterBox settings: imgsz=640,stride=32,auto=false,scaleup=true,...
"""

import argparse
import json
import pathlib
import pickle
import sys

from . import (ExportError, export_timm, export_torchvision, export_transformers, export_ultralytics, write_model)


def _load_pickle(path):
    try:
        import torch  # noqa: F401  (a Compose of torch objects unpickles through torch)
        try:
            return torch.load(path, weights_only=False)
        except Exception:
            pass
    except ImportError:
        pass
    with open(path, "rb") as f:
        return pickle.load(f)


def _outputs(spec):
    # NAME:DTYPE:D1xD2 -> (name, dtype, dims)
    out = []
    for item in spec or []:
        parts = item.split(":")
        if len(parts) != 3:
            raise ExportError(f"--ensemble-output {item!r} is not NAME:DTYPE:DIMS (e.g. SCORES:FP32:1000)")
        out.append((parts[0], parts[1].upper(), [int(d) for d in parts[2].split("x")]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m sluice_export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="write a Sluice model folder from a library's preprocessing")
    src = ex.add_mutually_exclusive_group(required=True)
    src.add_argument("--torchvision-pickle", metavar="FILE")
    src.add_argument("--timm-config", metavar="FILE.json")
    src.add_argument("--transformers", metavar="PATH_OR_JSON")
    src.add_argument("--ultralytics", metavar="SETTINGS")
    ex.add_argument("-o", "--out", required=True, help="the model folder to write (config.pbtxt, 1/pipeline.pbtxt)")
    ex.add_argument("--name", help="model name (default: the folder's name)")
    ex.add_argument("--max-batch", type=int, default=64, help="max_batch_size (default 64)")
    ex.add_argument("--ensemble-with", metavar="MODEL", help="also write an ensemble: this model, then MODEL")
    ex.add_argument("--ensemble-name", help="the ensemble's name (default ensemble_<name without preprocess_>)")
    ex.add_argument("--ensemble-input", help="MODEL's input name (default: the pixel output's, PIXELS)")
    ex.add_argument("--ensemble-output", action="append", metavar="NAME:DTYPE:DIMS",
                    help="MODEL's output, e.g. SCORES:FP32:1000 (repeatable); left out, a placeholder to edit")
    ex.add_argument("--transformers-backend", choices=["pil", "torchvision"],
                    help="the backend the processor ran on: pil (the *Pil classes) or torchvision (transformers 5's "
                         "default where torchvision is installed). A saved config does not say (save_pretrained "
                         "writes the class without its Pil suffix); left out, as AutoImageProcessor picks here")
    ex.add_argument("--timm-test-size", action="store_true",
                    help="use the config's test_input_size/test_crop_pct instead of input_size/crop_pct")
    ex.add_argument("--allow-approx", action="store_true",
                    help="accept a documented approximation (printed with its bound) instead of refusing")
    ex.add_argument("--print", action="store_true", help="also print the pipeline")
    a = ap.parse_args(argv)
    out = pathlib.Path(a.out)
    name = a.name or out.name
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    try:
        if a.torchvision_pickle:
            p = export_torchvision(_load_pickle(a.torchvision_pickle), name, allow_approx=a.allow_approx, log=log)
        elif a.timm_config:
            p = export_timm(json.loads(pathlib.Path(a.timm_config).read_text()), name, use_test_size=a.timm_test_size)
        elif a.transformers:
            p = export_transformers(a.transformers, name, backend=a.transformers_backend,
                                    allow_approx=a.allow_approx, log=log)
        else:
            p = export_ultralytics(a.ultralytics, name)
        written = write_model(p, out, name=name, max_batch_size=a.max_batch, ensemble_with=a.ensemble_with,
                              ensemble_name_=a.ensemble_name, model_input=a.ensemble_input,
                              model_outputs=_outputs(a.ensemble_output))
    except ExportError as e:
        print(f"sluice_export: refused: {e}", file=sys.stderr)
        return 2
    for w in written:
        print(w)
    if a.print:
        print(p.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
