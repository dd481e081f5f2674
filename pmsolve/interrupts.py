"""Ctrl-C means "stop and keep my work", whatever pmsolve is doing (issue 38).

Python turns SIGINT into :class:`KeyboardInterrupt` between two bytecodes. Three places break
that promise:

* **a finaliser**: raised inside ``__del__`` (z3's ``AstRef.__del__`` runs all the time), the
  exception is printed as "Exception ignored in ..." and lost, and the run goes on;
* **a native solver call**, during which the interpreter does not run: z3 catches the signal
  itself and answers "unknown" (reason ``canceled``), python-sat and HiGHS go on to the end,
  cvc5 even holds the interpreter until it is done;
* **start-up**, before anything is set up: a traceback.

The command line calls :func:`handling` first: a signal that landed in a finaliser is raised at
the next Python call or return outside it (a one-shot profile hook: no timer, so a loaded
machine cannot let the run finish first). The solver backends turn their solver's cancellation into
:class:`KeyboardInterrupt` (:func:`solver_cancelled`), cancel what can be cancelled, and run
what cannot inside :func:`uncancellable`. Library callers who never call :func:`handling` keep
Python's own handler (a cancelled solver is a KeyboardInterrupt for them too).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

#: how a solver names a cancellation: z3 says ``canceled`` or ``interrupted from keyboard``
CANCEL_REASONS = frozenset({"canceled", "interrupted from keyboard", "interrupted"})

_seen = [0]          # SIGINTs received while :func:`handling` is active
_profile: list = []  # the profile function our one-shot hook replaced, while the hook is set


def _in_finaliser(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _unhook() -> None:
    if _profile:
        sys.setprofile(_profile.pop())


def _raise_outside_finaliser(frame: FrameType, event: str, arg: object) -> None:
    """Profile hook: the first event outside a finaliser raises the pending KeyboardInterrupt
    (an exception from a profile function propagates into the profiled code)."""
    if _in_finaliser(frame) or frame.f_code.co_filename == __file__:   # not in :func:`settle`
        return
    _unhook()
    raise KeyboardInterrupt


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _seen[0] += 1
    if _in_finaliser(frame):   # raised here it would be printed and dropped: raise it outside
        if not _profile:
            _profile.append(sys.getprofile())
            sys.setprofile(_raise_outside_finaliser)
        return
    _unhook()
    raise KeyboardInterrupt


def _ours() -> bool:
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is _on_sigint)


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """SIGINT raises :class:`KeyboardInterrupt` inside the block, never inside a finaliser, and
    solver calls that cannot be cancelled may be cut short (:func:`uncancellable`). An ignored
    SIGINT (``nohup``, a background job of a script) stays ignored; outside the main thread
    nothing changes. The previous handler is restored on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.getsignal(signal.SIGINT)
    if old is signal.SIG_IGN or old is _on_sigint:
        yield
        return
    _seen[0] = 0
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        _unhook()   # the command is over: a pending signal must not hit the caller
        signal.signal(signal.SIGINT, old)


def settle() -> bool:
    """Whether a SIGINT arrived since :func:`handling` began; one still waiting to be raised
    (it landed in a finaliser) is dropped. The last call inside the block: leaving it would
    raise the waiting one from the ``with`` statement itself."""
    _unhook()
    return seen()


def seen() -> bool:
    """Whether a SIGINT arrived since :func:`handling` began."""
    return _seen[0] > 0


def ignored() -> bool:
    """Whether this process ignores SIGINT (then a solver must not catch it either)."""
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def solver_cancelled(reason: str, elapsed: float, timeout: float | None) -> bool:
    """Whether a solver's "unknown" answer was Ctrl-C: a cancellation (``reason``) that came
    before the solver's own ``timeout`` (z3 may call a timeout "canceled" too)."""
    return reason.strip().lower() in CANCEL_REASONS and (timeout is None or elapsed < timeout)


@contextlib.contextmanager
def uncancellable() -> Iterator[None]:
    """Around a native call that can neither be cancelled nor lets the interpreter run until it
    returns (cvc5): under :func:`handling`, SIGINT takes its default action for the call's
    duration, so Ctrl-C ends the process at once (status 130, by the signal) with everything
    saved so far, instead of after the call. Elsewhere nothing changes."""
    if not _ours():
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, _on_sigint)


def run_cancellable(solve, cancel, timeout: float | None = None, poll: float = 0.1):
    """``solve()`` in a helper thread while this one waits, so Ctrl-C is seen at once: then
    ``cancel()`` stops the solver and :class:`KeyboardInterrupt` is raised once it has stopped.
    For native solvers that release the interpreter but do not see the signal (python-sat,
    HiGHS). After ``timeout`` seconds ``cancel()`` is called too, and ``solve`` returns what
    the solver answers when cut short. Returns what ``solve`` returns, or raises what it raised."""
    out: dict[str, object] = {}

    def work() -> None:
        try:
            out["value"] = solve()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = exc

    t = threading.Thread(target=work, name="pmsolve-solver", daemon=True)
    start = time.monotonic()
    t.start()
    try:
        while t.is_alive():
            t.join(poll)
            if timeout is not None and t.is_alive() and time.monotonic() - start > timeout:
                cancel()
                timeout = None
    except KeyboardInterrupt:
        cancel()
        t.join()
        raise
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out.get("value")
