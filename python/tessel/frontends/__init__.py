"""Front ends: models from other frameworks into the ``graph`` dialect."""
