import asyncio
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Job:
    id: str
    payload: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0

    def backoff(self) -> float:
        return min(60.0, 0.5 * (2 ** self.attempts))


async def worker(name: str, queue: asyncio.Queue[Job], results: dict[str, Any]) -> None:
    while True:
        job = await queue.get()
        try:
            results[job.id] = await handle(job)
        except TimeoutError:
            job.attempts += 1
            if job.attempts < 5:
                await asyncio.sleep(job.backoff())
                await queue.put(job)
        finally:
            queue.task_done()


async def handle(job: Job) -> dict[str, Any]:
    await asyncio.sleep(0.01)
    return {"ok": True, "echo": json.dumps(job.payload, sort_keys=True)}
