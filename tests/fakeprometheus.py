"""A stand-in Prometheus over real HTTP: `/api/v1/query_range` answers one series per
query it knows (`rates[query]`: a constant, or a function of the step times giving the
values), and no series for any other query. For tests of code that reads
Prometheus; it does not evaluate PromQL."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import numpy as np


class FakePrometheus:
    """query_range answers: `rates[query]` at every step (one series); no series for
    any other query."""

    def __init__(self, rates: dict[str, Any]) -> None:
        self.rates = rates
        self.queries: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers["Content-Length"])
                form = parse_qs(self.rfile.read(length).decode())
                query = form["query"][0]
                owner.queries.append(query)
                start, end = float(form["start"][0]), float(form["end"][0])
                step = float(form["step"][0].rstrip("s"))
                times = np.arange(start, end + step / 2, step)
                rate = owner.rates.get(query)
                values = (rate(times) if callable(rate) else np.full(len(times), rate)
                          if rate is not None else None)
                result = [] if values is None else [{"metric": {}, "values": [
                    [t, str(v)] for t, v in zip(times, values, strict=True)]}]
                body = json.dumps({"status": "success",
                                   "data": {"resultType": "matrix", "result": result}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
