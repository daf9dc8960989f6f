"""``call_separately(kernel, args)``: call a compiled kernel without compiling its code into the
caller, to shorten a cold start's compilation.

numba links the LLVM bitcode of every compiled callee into its caller and then runs the whole
module's optimisation pipeline and machine-code emission again, at every level of the call
tree: a kernel's code is re-optimised once for each kernel above it. For the fused contact
ticks, whose call trees are deep (tick -> stage -> sticking correction -> LCP solver ->
factorisations), most of a cold start's compile time is this repetition: recompiling the QP
active-set tick alone, its callees cached, spent 14.7 s in LLVM's module passes and 8.8 s
emitting object code (docs/node.md, start-up).

``call_separately(kernel, (x, y))`` inside a jitted function compiles (or loads) ``kernel`` for
the argument types on its own, as a call from Python would, and emits a call of a symbol that
the caller's module only declares; the JIT's linker resolves it to the kernel's loaded code.
The callee's code is compiled once, whatever calls it. The call is a direct call of a native
function, as a linked call without inlining; use it at the boundaries of large kernels (the
stages of a tick), where there is nothing to gain from inlining.

The symbol is not numba's name of the callee: that name carries a per-process counter, so the
callee's cached code (written by whichever process compiled it last -- the node, its compile
helper) and a cached caller (compiled in another process) need not agree on it. The caller
declares a name derived from the callee's module, qualified name and argument types, and the
loaded callee's entry is published under it in the process-wide symbol table
(``llvmlite.binding.add_symbol``, as numba does for its runtime helpers).

A caller loaded from numba's on-disk cache contains only the declaration: numba runs the
compile result's ``reload_init`` functions before it loads the cached object code, and the
call adds one there that compiles / loads the callee for the same types and publishes it
first (a caller compiled in-process has it published at typing). Kernels that link such a
caller inherit it
(numba merges ``reload_init`` of linked libraries). Exceptions raised in the callee propagate
as from a linked call. The package's cache fingerprint (:mod:`wbc_dynamics.kernel_cache`)
drops callers and callees together, so a cached caller never meets a changed callee.

The callee must be a module-level ``@njit`` dispatcher (the loader finds it again by module
and qualified name in a new process).
"""

from __future__ import annotations

import hashlib
import importlib
from typing import Any

from llvmlite import binding as llvm
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["call_separately"]


def _find(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _symbol(module: str, qualname: str, argtypes: tuple) -> str:
    """The name a caller declares for ``module.qualname`` compiled for ``argtypes``: the same
    in every process (numba's own symbol names carry a per-process counter)."""
    key = repr((module, qualname, tuple(str(t) for t in argtypes))).encode()
    return f"wbc_separate.{qualname}.{hashlib.sha1(key).hexdigest()[:20]}"


def _publish(dispatcher: Any, argtypes: tuple, symbol: str) -> None:
    """Compile / load ``dispatcher`` for ``argtypes`` and make ``symbol`` resolve to its
    native entry (the process-wide symbol table numba's own runtime helpers use)."""
    dispatcher.compile(argtypes)
    cres = dispatcher.overloads[tuple(argtypes)]
    llvm.add_symbol(symbol, cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name))


class _LoadCallee:
    """``reload_init`` entry: compile / load ``module.qualname`` for ``argtypes`` and publish
    it under ``symbol`` (picklable: numba pickles it with the caller's cached compile
    result)."""

    def __init__(self, module: str, qualname: str, argtypes: tuple, symbol: str) -> None:
        self.module = module
        self.qualname = qualname
        self.argtypes = argtypes
        self.symbol = symbol

    def __call__(self) -> None:
        _publish(_find(self.module, self.qualname), self.argtypes, self.symbol)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _LoadCallee) and self.symbol == other.symbol

    def __hash__(self) -> int:
        return hash(self.symbol)


@intrinsic
def call_separately(typingctx, kernel, args):  # noqa: ANN001, ANN201 (numba typing)
    """``kernel(*args)`` (``args`` a tuple) through the symbol of its separately compiled
    code: see the module docstring."""
    if not isinstance(kernel, types.Dispatcher):
        raise TypeError(f"call_separately: kernel must be an @njit function, got {kernel}")
    if not isinstance(args, types.BaseTuple):
        raise TypeError(f"call_separately: args must be a tuple, got {args}")
    argtypes = tuple(args.types)
    callee_sig = typingctx.resolve_function_type(kernel, argtypes, {})
    if callee_sig is None:
        raise TypeError(f"call_separately: {kernel} cannot take {argtypes}")
    dispatcher = kernel.dispatcher
    fndesc = dispatcher.get_compile_result(callee_sig).fndesc
    py_func = dispatcher.py_func
    # the types it was compiled for (literal arguments erased), as a new process must ask
    compiled_types = tuple(callee_sig.args)
    symbol = _symbol(py_func.__module__, py_func.__qualname__, compiled_types)
    _publish(dispatcher, compiled_types, symbol)
    loader = _LoadCallee(py_func.__module__, py_func.__qualname__, compiled_types, symbol)

    def codegen(context, builder, signature, llargs):  # noqa: ANN001, ANN202
        context.active_code_library._reload_init.add(loader)
        values = [context.cast(builder, builder.extract_value(llargs[1], i), argtypes[i],
                               callee_sig.args[i]) for i in range(len(argtypes))]
        fnty = context.call_conv.get_function_type(fndesc.restype, fndesc.argtypes)
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
        status, result = context.call_conv.call_function(builder, fn, fndesc.restype,
                                                         fndesc.argtypes, values)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return result

    return callee_sig.return_type(kernel, args), codegen
