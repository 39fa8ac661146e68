"""Run independent jobs on ``dask.distributed``: an embedded local cluster or an existing one.

The tools' parallel work (``taihu-tune``'s candidate simulations) is a list of independent,
picklable jobs ``fn(item)``. :class:`Executor` maps a module-level function over them on

* an embedded :class:`distributed.LocalCluster` (default): ``workers`` worker processes (default:
  the cores this process may use), one thread each -- the simulator is pure Python, threads
  would share one interpreter lock; no dashboard, the cluster's own log lines silenced (only
  errors reach stderr); started on the first :meth:`Executor.map` that has work, so a run that
  needs no job never starts one;
* an existing cluster, ``scheduler="tcp://HOST:8786"`` (``dask scheduler`` / ``dask worker
  tcp://HOST:8786`` started by the user; its workers must have taihu installed); ``workers`` is
  then ignored;
* this process, ``workers=0`` (no Dask at all; for debugging and profiling).

:meth:`Executor.start` connects in a background thread (an embedded cluster takes a few seconds
to start and its workers to import taihu) while the caller does something else, e.g. lowers a
network; :meth:`Executor.client` waits for it and returns the ``distributed.Client`` for callers
that submit jobs themselves (``taihu-run --workers``: ``backends/sim/parallel.py``).

Results come back in the order of the items whatever the number of workers or the order in
which jobs finish, so a caller that reduces them deterministically gets the same answer from
1 or 20 workers. A job that raises makes :meth:`Executor.map` raise :class:`JobError` naming the
item (jobs that want to report failures as data should catch them themselves).

Errors: an unreachable scheduler or a cluster that cannot start is an :class:`ExecutorError`
with a one-line message.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["Executor", "ExecutorError", "JobError", "default_workers"]

T = TypeVar("T")
R = TypeVar("R")

#: seconds to wait for an existing scheduler to answer
CONNECT_TIMEOUT = 5


class ExecutorError(RuntimeError):
    """The cluster could not be started or reached (one-line message)."""


class JobError(RuntimeError):
    """A job raised; the message names the item (``describe(item)``) and the error."""


def default_workers() -> int:
    """The number of cores this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Executor:
    """Map picklable jobs over a Dask cluster (module docstring). Use as a context manager;
    the embedded cluster is shut down on exit."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None) -> None:
        if workers is not None and workers < 0:
            raise ExecutorError(f"--workers {workers}: expected a number >= 0")
        self.workers = default_workers() if workers is None else workers
        self.scheduler = scheduler
        self._client: Any = None
        self._cluster: Any = None
        self._starting: threading.Thread | None = None
        self._start_error: BaseException | None = None

    @property
    def where(self) -> str:
        """Where the jobs run, for messages: ``4 local workers``, ``tcp://h:8786``, ``in-process``."""
        if self.scheduler:
            return self.scheduler
        if self.workers == 0:
            return "in-process"
        return f"{self.workers} local worker{'s' if self.workers != 1 else ''}"

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, modules: Sequence[str] = ()) -> None:
        """Connect in a background thread (start the embedded cluster, or reach the scheduler)
        and have every worker import ``modules``; :meth:`client`, :meth:`map` and
        :meth:`close` wait for it. Nothing to do in-process or when already started."""
        if self._starting is not None or self._client is not None or self.in_process:
            return

        def connect() -> None:
            try:
                client = self._connect()
                if modules:
                    client.run(_import_modules, tuple(modules))
            except BaseException as e:  # re-raised by _wait, in the caller's thread
                self._start_error = e

        self._starting = threading.Thread(target=connect, name="taihu-dask-start", daemon=True)
        self._starting.start()

    def _wait(self) -> None:
        """Join a :meth:`start` thread; re-raise what it raised."""
        thread, self._starting = self._starting, None
        if thread is not None:
            thread.join()
            err, self._start_error = self._start_error, None
            if err is not None:
                raise err

    @property
    def in_process(self) -> bool:
        """Jobs run in this process (``workers=0`` and no scheduler): there is no client."""
        return self.workers == 0 and not self.scheduler

    def client(self) -> Any:
        """The connected ``distributed.Client`` (starting the embedded cluster now unless
        :meth:`start` did); :class:`ExecutorError` if it cannot be started or reached, or the
        executor runs jobs in this process."""
        if self.in_process:
            raise ExecutorError("the in-process executor (--workers 0) has no Dask client")
        self._wait()
        return self._connect()

    def close(self) -> None:
        """Disconnect; shut the embedded cluster down (idempotent)."""
        try:
            self._wait()
        except BaseException:  # the start failed: nothing more to close than what it left
            pass
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        from distributed import Client, LocalCluster

        if self.scheduler:
            try:
                self._client = Client(self.scheduler, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as e:
                raise ExecutorError(f"cannot reach the Dask scheduler at {self.scheduler}: "
                                    f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
            return self._client
        try:
            self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                         dashboard_address=":0", silence_logs=logging.CRITICAL)
            self._client = Client(self._cluster)
        except (OSError, TimeoutError, ValueError) as e:
            self.close()
            raise ExecutorError(f"cannot start a local Dask cluster of {self.workers} workers: {e}") from None
        return self._client

    def map(self, fn: Callable[[T], R], items: Sequence[T],
            on_result: Callable[[int, R], None] | None = None,
            describe: Callable[[T], str] = str,
            on_error: Callable[[T, BaseException], R] | None = None) -> list[R]:
        """``[fn(item) for item in items]`` on the cluster, in the order of ``items``.

        ``fn`` must be a module-level function (workers import it by name); ``items`` and the
        results must pickle. ``on_result(index, result)`` is called in this process as each job
        finishes (completion order), e.g. to advance a progress bar. A raising job (or one
        whose worker died, e.g. killed by the nanny for exceeding its memory limit): its result
        is ``on_error(item, exception)`` when given, else :class:`JobError` naming
        ``describe(item)`` and the other jobs are cancelled."""
        if not items:
            return []
        if self.in_process:
            out = []
            for i, item in enumerate(items):
                try:
                    r = fn(item)
                except Exception as e:
                    if on_error is None:
                        raise JobError(f"{describe(item)}: {type(e).__name__}: {e}") from e
                    r = on_error(item, e)
                if on_result is not None:
                    on_result(i, r)
                out.append(r)
            return out
        from distributed import as_completed

        client = self.client()
        futures = client.map(fn, list(items), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(futures)
        try:
            for fut in as_completed(futures):
                i = index[fut.key]
                if fut.status == "error":
                    err = fut.exception()
                    if on_error is None:
                        raise JobError(f"{describe(items[i])}: {type(err).__name__}: {err}")
                    results[i] = on_error(items[i], err)
                else:
                    results[i] = fut.result()
                if on_result is not None:
                    on_result(i, results[i])
        except BaseException:
            client.cancel(futures)
            raise
        return results


def _import_modules(names: tuple[str, ...]) -> None:
    """Run on every worker by :meth:`Executor.start`: import ``names`` (warm-up)."""
    for name in names:
        importlib.import_module(name)
