"""A stand-in for the prediction server's TensorFlow half (tests only): the real
``predictor`` package serves (its flags, routes, traffic split and JSON) with this
directory's ``model.py`` in place of the one that loads SavedModels with TensorFlow."""

from pathlib import Path

_REAL = Path(__file__).resolve().parents[4] / "predictor"
# Searched after this directory: model.py is found here, every other module there.
__path__.append(str(_REAL))
# The real package's own names (BadRequestError), as its modules import them.
exec(compile((_REAL / "__init__.py").read_text(), str(_REAL / "__init__.py"), "exec"))
