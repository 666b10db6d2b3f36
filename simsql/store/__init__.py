"""Where fingerprints live: the column type, the mixins' bindings, the registry's rows and the
hooks that keep them current.

The public home of :func:`binding_for` (a model's :class:`Binding`: where its fingerprints,
blocks and signature live) and :class:`SimHash` (the column type); the mixins themselves are
:class:`simsql.SimHashMixin` and :class:`simsql.WideSimHashMixin`.
"""

from .storage import Binding, binding_for
from .types import SimHash

__all__ = ["Binding", "SimHash", "binding_for"]
