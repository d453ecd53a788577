"""The model classes' names (config.json's ``model_class``) without the classes, so that the
CLI lists them in ``--help`` without importing torch; ``model/factory.py``'s ``MODELS`` maps
each to its class (``tests/model/test_factory.py`` keeps the two equal)."""

DEFAULT_MODEL = "tft"  # runs written before config.json named the class
MODEL_NAMES: tuple[str, ...] = (DEFAULT_MODEL,)
