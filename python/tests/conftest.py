import pathlib
import sys

# The package from this checkout, installed or not.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
