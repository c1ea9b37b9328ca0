"""sluice_export: turn a model's own preprocessing into a Sluice model folder.

    from sluice_export import export_timm, write_model
    p = export_timm({"input_size": (3, 224, 224), "crop_pct": 0.875, "interpolation": "bicubic"})
    write_model(p, "model_repository/preprocess_x")

Every exporter refuses (ExportError, naming the transform and why) what it
cannot express exactly."""

from .builder import ExportError, Pipeline, config_text, ensemble_text, write_model
from .capabilities import sluice_capabilities
from .timm_export import export_timm
from .torchvision_export import export_torchvision
from .transformers_export import export_transformers
from .ultralytics_export import export_ultralytics, parse_settings

__all__ = ["ExportError", "Pipeline", "config_text", "ensemble_text", "write_model", "sluice_capabilities",
           "export_timm", "export_torchvision", "export_open_clip", "export_transformers", "export_ultralytics",
           "parse_settings"]
__version__ = "0.1.0"


def export_open_clip(preprocess, name="preprocess", allow_approx=False, log=print):
    """open_clip's preprocess (a torchvision Compose: Resize bicubic, CenterCrop,
    _convert_to_rgb, ToTensor, Normalize): the torchvision exporter."""
    return export_torchvision(preprocess, name=name, allow_approx=allow_approx, source="open_clip", log=log)
