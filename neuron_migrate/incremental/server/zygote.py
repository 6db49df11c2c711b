"""The server's process: load the tool once, then fork a child for each command.

Before it listens, the server warms itself with a scan (cold, then again) and a rewrite of a
two-file sample in a scratch folder, which imports every module those commands import and
fills what they keep per process; it also loads the bundled data of every matrix version. Then
it freezes what it holds out of the collector's passes (`gc.freeze`).

It serves with one spare child at a time, forked in advance, which accepts the next connection
itself. A forked child copies each page of the parent's that it writes to, and reference
counting writes to every object it touches: a spare pays those copies before a command comes,
by re-scanning the sample (about 10 ms of a re-scan of a 5,000-file tree), and is forked and set
up while no one waits. When the spare takes a command, it tells the server, which forks the next
spare at once (commands run side by side), and runs the command: it takes the command's working
folder, umask, environment, argv and standard streams, runs it as `neuron-migrate` would
(`cli.exit_code`) and sends its exit code back. A spare answers PING (what the server is) and
stays spare; it answers STOP, and RUN when a module the server loaded or a bundled data file
changed on disk since it started (STALE), and the server stops. A spare dies with the server
(on Linux, even a killed one). A command it took runs to its end if the server stops for want
of commands or for a change on disk, or is killed; STOP (`server stop`) ends it too, and its
client says so. The server reaps its children itself, so that the pid of a command it has not
reaped is never another process's when it signals it.

Each command adds the JSON report snapshots it used (`incremental.report_snapshot`) to a
list beside the socket; a spare that waits reads the listed ones ahead whenever the list
changes, so that the next re-scan of the same tree need not read its snapshot, and on Linux
watches their trees (`incremental.tree_watch`), so that it need not stat every file either.
"""

import contextlib
import fcntl
import gc
import io
import json
import os
import select
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from neuron_migrate import __version__
from neuron_migrate.cli import exit_code
from neuron_migrate.incremental import report_snapshot
from neuron_migrate.incremental.server.location import Location, location, make_private
from neuron_migrate.incremental.server.protocol import (
    EXITED,
    INFO,
    PING,
    RUN,
    STALE,
    STARTED,
    STOP,
    ProtocolError,
    peer_is_this_user,
    receive_request,
    send_reply,
)
from neuron_migrate.incremental.stat_index import Signature, signature

DEFAULT_IDLE_TIMEOUT_S = 3600.0
_REQUEST_TIMEOUT_S = 5.0  # for a client to send its whole request
_SPARE_FAILURES = 3  # spares that die one after another before taking a command: stop
# A spare waiting for a command looks this often (a stat) whether the list of the report
# snapshots the last commands used has changed, and reads them ahead if so: a re-scan through
# the server then need not read its snapshot (milliseconds on a large tree).
_READ_AHEAD_EVERY_S = 0.2
_LISTED_SNAPSHOTS = 2  # the last commands' (each holds the report of one tree)

# What a spare tells the server, one byte on its pipe (the pipe's end: it died): it took a
# command, answered a PING, was asked to STOP, found the server's code STALE.
_TOOK_RUN, _PINGED, _STOPPED, _STOPPING = b"r", b"p", b"s", b"t"
_END_COMMANDS_WAIT_S = 5.0  # for the commands a STOP ends to die of SIGTERM, before SIGKILL

_SAMPLE = {
    "train.py": "import torch\nimport torch_xla.core.xla_model as xm\n\n"
    "device = xm.xla_device()\nx = torch.ones(2, device=device).sum()\nxm.mark_step()\n",
    "util.py": "import torch\n\n\ndef double(x):\n    return x * 2\n",
}


class AlreadyRunning(Exception):
    """Another server of this installation holds the lock."""


def serve(idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, where: Location | None = None) -> None:
    """Run the server until STOP, SIGTERM, SIGINT, a change on disk, or `idle_timeout_s`
    without a request. Raises AlreadyRunning, or OSError when its folder is not private."""
    where = where or location()
    make_private(where.folder)
    lock = os.open(where.lock, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AlreadyRunning(f"a server already runs ({where.socket})") from None
        with tempfile.TemporaryDirectory(prefix="neuron-migrate-server-") as scratch:
            rescan = _warm_up(Path(scratch))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(where.socket)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                listener.bind(where.socket)
                os.chmod(where.socket, 0o600)
                listener.listen(64)
                _Server(listener, lock, rescan, idle_timeout_s, where.snapshots).loop()
            finally:
                listener.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(where.socket)
    finally:
        os.close(lock)  # releases the lock


class _Spare(NamedTuple):
    pid: int
    messages: int  # the read end of its pipe


class _Server:
    def __init__(
        self,
        listener: socket.socket,
        lock: int,
        rescan: list[str],
        idle_timeout_s: float,
        snapshots: str,
    ) -> None:
        self.listener = listener
        self.lock = lock  # a child that kept it would hold the lock after the server stopped
        self.pid = os.getpid()
        self.rescan = rescan  # what a spare runs before it accepts
        self.idle_timeout_s = idle_timeout_s
        self.snapshots = snapshots  # the list of the snapshots commands used last
        self.stamp = code_stamp()
        self.started = time.time()
        self.served = 0
        self.commands: set[int] = set()  # the processes of the commands taken, not yet reaped

    def loop(self) -> None:
        # Children are reaped here (`reap`); SIGTERM ends the loop as SIGINT does.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        gc.collect()
        gc.freeze()
        spare: _Spare | None = None
        failures = 0
        try:
            spare = self.fork_spare()
            last_command = time.monotonic()  # a PING is not one
            while True:
                idle_left = last_command + self.idle_timeout_s - time.monotonic()
                ready, _, _ = select.select([spare.messages], [], [], max(idle_left, 0))
                if not ready:
                    return  # idle
                message = os.read(spare.messages, 1)
                self.reap()
                if message == _PINGED:
                    continue
                os.close(spare.messages)
                if message == _TOOK_RUN:
                    self.commands.add(spare.pid)
                    self.served += 1
                    last_command = time.monotonic()
                    failures = 0
                elif message == b"":  # it died without a command
                    failures += 1
                    if failures >= _SPARE_FAILURES:
                        print("neuron-migrate server: spares keep dying; stopping", file=sys.stderr)
                        return
                else:  # STOP, or stale
                    spare = None
                    if message == _STOPPED:
                        self.end_commands()
                    return
                spare = None
                spare = self.fork_spare()
        except KeyboardInterrupt:
            return
        finally:
            if spare is not None:  # idle: waiting to accept
                with contextlib.suppress(OSError):
                    os.kill(spare.pid, signal.SIGTERM)

    def reap(self) -> None:
        """Reap the children that have ended: spares, and commands done."""
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.commands.discard(pid)

    def end_commands(self) -> None:
        """`server stop`: end the commands still running (SIGTERM, as a process of its own
        would be stopped; SIGKILL for one that outlives it), and wait until they have."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.commands:  # not reaped: still this server's child
                with contextlib.suppress(OSError):
                    os.kill(pid, signum)
            deadline = time.monotonic() + _END_COMMANDS_WAIT_S
            while self.commands and time.monotonic() < deadline:
                time.sleep(0.01)
                self.reap()

    def fork_spare(self) -> _Spare:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(read_end)
                os.close(self.lock)
                self.spare(write_end)
            except BaseException:
                with contextlib.suppress(BaseException):
                    traceback.print_exc()
                code = 1
            os._exit(code)
        os.close(write_end)
        return _Spare(pid, read_end)

    def spare(self, notify: int) -> None:
        """A spare's life: warm up, then accept until it takes a command (which it runs) or
        stops the server."""
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _on_parent_death(signal.SIGTERM)  # a spare does not outlive a killed server
        if os.getppid() != self.pid:  # which died before that was set
            return
        try:
            with _silenced():
                exit_code(self.rescan)
        except Exception:  # its scratch folder gone, say: the spare serves, only colder
            traceback.print_exc()
        listed: Signature | None = None  # of the snapshot list, when last read
        while True:
            ready, _, _ = select.select([self.listener], [], [], _READ_AHEAD_EVERY_S)
            if not ready:
                listed = _read_ahead(self.snapshots, listed, self.waiting)
                report_snapshot.drain_watches()
                continue
            conn, _address = self.listener.accept()
            with conn:
                conn.settimeout(_REQUEST_TIMEOUT_S)
                if not peer_is_this_user(conn):
                    continue
                try:
                    kind, payload, fds = receive_request(conn, max_fds=3)
                except (OSError, ProtocolError, ValueError, EOFError):
                    continue
                if kind == RUN and len(fds) == 3 and isinstance(payload, dict):
                    if code_stamp(path for path, _, _ in self.stamp) == self.stamp:
                        _on_parent_death(0)  # the command runs to its end
                        os.write(notify, _TOOK_RUN)
                        self.listener.close()
                        _run_child(conn, payload, fds, self.snapshots)  # never returns
                    kind = STALE
                for fd in fds:
                    os.close(fd)
                try:
                    if kind == STALE:
                        send_reply(conn, STALE)
                    elif kind in (PING, STOP):
                        send_reply(conn, INFO, info=self.info())
                except OSError:
                    pass  # the client went away
                if kind in (STALE, STOP):
                    os.write(notify, _STOPPED if kind == STOP else _STOPPING)
                    return
                if kind == PING:
                    os.write(notify, _PINGED)

    def waiting(self) -> bool:
        """Whether someone waits to be accepted (a spare gives up reading ahead for them)."""
        return bool(select.select([self.listener], [], [], 0)[0])

    def info(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "version": __version__,
            "python": sys.executable,
            "started": self.started,
            "served": self.served,
            "idle_timeout_s": self.idle_timeout_s,
            "trees_ahead": report_snapshot.held_ahead(),  # what the spare that answers holds
        }


def _run_child(
    conn: socket.socket, payload: dict[str, Any], fds: list[int], snapshots: str
) -> None:
    """Become the command's process and run it. If that fails before the command has been
    told it started (its folder gone, say), it is told nothing and runs by itself. Then add
    the report snapshots it used to the list at `snapshots`."""
    try:
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:  # a worker it starts holds the command's streams only as 0, 1 and 2
                os.close(fd)
        os.chdir(payload["cwd"])
        os.umask(payload["umask"])
        os.environ.clear()
        os.environ.update(payload["env"])
        time.tzset()
        sys.argv = list(payload["argv"])
        _reopen_streams(payload["streams"])
        conn.settimeout(None)
        send_reply(conn, STARTED, os.getpid())
        finished = threading.Event()
        threading.Thread(
            target=_end_with_client, args=(conn, finished), name="client watch", daemon=True
        ).start()
    except BaseException:
        os._exit(2)
    code = 1  # what an exception that escapes gives, as in a process of its own
    report_snapshot.used.clear()  # the spare's own re-scan
    try:
        code = exit_code(sys.argv[1:])
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        finished.set()  # the client closes once told: that is no client gone
        with contextlib.suppress(BaseException):
            send_reply(conn, EXITED, code)
        with contextlib.suppress(BaseException):
            _list_snapshots(snapshots, report_snapshot.used)
        os._exit(code & 0xFF)


def _end_with_client(conn: socket.socket, finished: threading.Event) -> None:
    """End the command as its own process would end if its client is gone before it is done
    (killed with SIGKILL, its terminal closed): a client sends nothing after RUN, so the
    connection's end is the client's. A rewrite --apply must not go on writing files for no
    one. SIGKILL, as a client killed so would have had: its workers end with it, and the next
    --apply removes a temporary file left mid-write."""
    try:
        while conn.recv(1):
            pass
    except OSError:
        pass
    if not finished.is_set():
        os.kill(os.getpid(), signal.SIGKILL)


def _list_snapshots(listing: str, used: Sequence[tuple[str, str]]) -> None:
    """Put the report snapshots a command `used` (each with the working folder it used it
    from) first in the list at `listing`: a JSON list of [path, folder] pairs."""
    if not used:
        return
    listed = _listed(listing) or []
    pairs = list(dict.fromkeys([*reversed(used), *listed]))[:_LISTED_SNAPSHOTS]
    temporary = f"{listing}.{os.getpid()}.tmp"
    Path(temporary).write_text(json.dumps(pairs))
    os.replace(temporary, listing)


def _listed(listing: str) -> list[tuple[str, str]] | None:
    """The [path, folder] pairs at `listing`; None when it cannot be read."""
    try:
        pairs = json.loads(Path(listing).read_text())
        return [(str(path), str(cwd)) for path, cwd in pairs]
    except (OSError, ValueError, TypeError):
        return None


def _read_ahead(
    listing: str, last: Signature | None, stop: Callable[[], bool] | None = None
) -> Signature | None:
    """Read ahead the report snapshots listed at `listing`, and watch their trees, if the
    list has changed since it had the signature `last`; the signature it has now (None when
    `stop` made it give up: the next call reads on)."""
    now = signature(listing)
    if now is None or now == last:
        return now
    pairs = _listed(listing)
    if pairs is None:
        return None
    return now if report_snapshot.read_ahead(pairs, watch=True, stop=stop) else None


def _reopen_streams(streams: list[tuple[str, str]]) -> None:
    """New sys.stdin, stdout and stderr over descriptors 0-2, as the interpreter would open
    them for the command's process: its encodings, stdout line-buffered on a terminal, stderr
    always. (sys.__stdout__ and the others stay: they are over the same descriptors.)"""
    (in_enc, in_err), (out_enc, out_err), (err_enc, err_err) = streams
    # The streams outlive this function: they are the command's, for the rest of the child.
    sys.stdin = io.TextIOWrapper(
        open(0, "rb", closefd=False),  # noqa: SIM115
        encoding=in_enc,
        errors=in_err,
    )
    sys.stdout = io.TextIOWrapper(
        open(1, "wb", closefd=False),  # noqa: SIM115
        encoding=out_enc,
        errors=out_err,
        line_buffering=os.isatty(1),
    )
    sys.stderr = io.TextIOWrapper(
        open(2, "wb", closefd=False),  # noqa: SIM115
        encoding=err_enc,
        errors=err_err,
        line_buffering=True,
    )


def _on_parent_death(signum: int) -> None:
    """Where the system offers it (Linux), get `signum` when the parent dies (0: nothing)."""
    if sys.platform != "linux":
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signum)  # PR_SET_PDEATHSIG


def code_stamp(paths: Iterable[str] | None = None) -> tuple[tuple[str, int, int], ...]:
    """Size and modification time of every module of the package this process loaded and of
    every bundled data file (what a child would run and read), or of the files at `paths`:
    a spare checks those the server stamped, whatever it has loaded since."""
    if paths is None:
        paths = _stamped_files()
    stamp = []
    for path in sorted(set(paths)):
        try:
            info = os.stat(path)
        except OSError:
            stamp.append((path, -1, -1))
        else:
            stamp.append((path, info.st_mtime_ns, info.st_size))
    return tuple(stamp)


def _stamped_files() -> list[str]:
    from neuron_migrate.resources import matrix_dir, rules_dir

    paths: list[str] = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and (name == "neuron_migrate" or name.startswith("neuron_migrate.")):
            paths.append(path)
    for folder in (rules_dir(), matrix_dir()):
        for parent, _dirs, names in os.walk(folder):
            paths.extend(os.path.join(parent, name) for name in names)
    return paths


def _warm_up(scratch: Path) -> list[str]:
    """Run what the served commands run, once, over a sample in `scratch`, with no output
    anywhere; the command that re-scans it (what a spare runs)."""
    from neuron_migrate.matrix.versions import available_versions
    from neuron_migrate.scan.scan_data import preload

    preload(available_versions())
    import ctypes  # noqa: F401  (for the spares: `_on_parent_death`)

    # What a rewrite worker loads (libcst), and what a spare's watches load.

    root = scratch / "sample"
    root.mkdir()
    for name, text in _SAMPLE.items():
        (root / name).write_text(text)
    cache = str(scratch / "cache")
    scan = ["scan", "--format", "json", "-j", "1", "--cache-dir", cache, str(root)]
    with _silenced():
        exit_code(scan)
        exit_code(scan)
        exit_code(["rewrite", "-j", "1", "--cache-dir", cache, str(root)])
    return scan


@contextlib.contextmanager
def _silenced() -> Iterator[None]:
    """Descriptors 1 and 2, and sys.stdout and stderr, pointed at /dev/null."""
    saved = [os.dup(1), os.dup(2)]
    streams = sys.stdout, sys.stderr
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        with open(os.devnull, "w") as nowhere:
            sys.stdout = sys.stderr = nowhere
            yield
    finally:
        sys.stdout, sys.stderr = streams
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)
