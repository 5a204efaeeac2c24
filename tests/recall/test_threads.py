"""The lazily started worker pools shared by recall and the embedder."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from connector.threads import LazyPool


def test_a_pool_starts_on_first_use_once_and_names_its_threads() -> None:
    lazy = LazyPool("unit-test", max_workers=2)
    pools: list[ThreadPoolExecutor] = []
    askers = [threading.Thread(target=lambda: pools.append(lazy.get())) for _ in range(8)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert len({id(p) for p in pools}) == 1
    assert pools[0].submit(lambda: threading.current_thread().name).result().startswith("unit-test")
    pools[0].shutdown()
