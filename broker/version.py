"""The bundled broker's version (its ``product_version``), in a module of its own: the modules
that report it import this one, not the ``broker`` package, whose ``__init__`` imports the
whole server (an import cycle otherwise)."""

__version__ = "0.1.0"
