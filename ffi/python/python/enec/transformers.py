"""Load a compressed Hugging Face model folder into ``transformers`` in one call.

Importing this module needs PyTorch and ``transformers``; building and installing the package
does not.
"""

import os
from typing import Any, Optional, Union

try:
    import transformers
except ImportError:
    raise ImportError("enec.transformers needs transformers: pip install transformers") from None

from . import torch as _torch

_Path = Union[str, "os.PathLike[str]"]


def from_pretrained(
    folder: _Path, model_class: Any = None, *, threads: Optional[int] = None, **kwargs: Any
) -> Any:
    """The ``transformers`` model of the compressed model folder ``folder`` (what
    ``enec compress DIR OUT`` or :func:`enec.compress_dir` made of a Hugging Face folder): its
    config (``config.json``, copied as it was) and every shard's weights
    (:func:`enec.torch.load_folder`, on ``threads`` threads) handed to transformers' own
    ``from_pretrained``, which builds the model and loads them. ``model_class``: the class to
    build (default ``transformers.AutoModel``; ``AutoModelForCausalLM`` and the like, or a
    model class); ``kwargs`` go to ``from_pretrained`` (``torch_dtype``, ``config``, ...). The
    tokenizer loads from the same folder with ``AutoTokenizer.from_pretrained(folder)``."""
    cls = model_class or transformers.AutoModel
    config = kwargs.pop("config", None) or transformers.AutoConfig.from_pretrained(folder)
    if hasattr(cls, "_model_mapping"):
        # An Auto class: its from_pretrained takes a state dict only with a model name (which
        # would make it look for safetensors files), so build the class the config names.
        cls = cls._model_mapping[type(config)]
    state_dict = _torch.load_folder(folder, threads=threads)
    return cls.from_pretrained(None, config=config, state_dict=state_dict, **kwargs)


__all__ = ["from_pretrained"]
