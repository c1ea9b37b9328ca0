"""The GPU-machine Triton checks (conftest.py): a package, so that its
conftest and helper module keep names of their own beside tests/'s."""
