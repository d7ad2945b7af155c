"""The runtime's Python bindings: the only modules that touch the compiled extensions.

The package's C reaches Python through two kinds of extension module, and
every Python call into them goes through this sub-package:

* the cffi modules (``seer_env._core``, the runtime without a model, and one
  per model folder, the runtime and that model in one module), built by
  `build` (the builder ``setup.py`` and the SDK run; standard library and cffi
  only), loaded by `loader` (the package's prebuilt module while it matches
  the sources, else a build into the cache), a model's table marshalled by
  `native` (`NativeModel`, `HandlerContext`), run by `runtime` (`Runtime`:
  ``B`` instances on one executor, the buffers as NumPy views), and the
  tables of models written in Python made by `pytable`.  These are the only
  modules that use ``ffi``/``lib`` (``tests/test_layers.py``);
* ``seer_env._fast``, the env faces' plain CPython extension: the call gate
  every env call passes through (`gate`) and a step's per-call kernels
  (`kernels`), each with a Python stand-in where the extension is not built.

The compiled modules themselves stay at the package's root, where
``setup.py`` builds them (``seer_env._core``, ``seer_env._fast``).  Layers
(``[tool.importlinter]`` in ``pyproject.toml``), top to bottom:
``runtime | pytable | gate | kernels``, ``native``, ``loader``, ``build``.
Everything above reaches the runtime through their functions:

```python
from seer_env._bind.runtime import Runtime
from seer_env.registry import native_model

rt = Runtime(native_model("phold_v0"), {"num_entities": 64}, num_instances=2)
rt.reset([1, 2])
rt.step()
rt.close()
```

The old paths ``seer_env._runtime`` and ``seer_env._loader`` (the docs name
``seer_env._runtime.Runtime`` and ``seer_env._loader.cache_dir``) re-export
`runtime` and `loader`.
"""
