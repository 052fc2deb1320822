"""Queue throughput and long-poll wake-up latency over real HTTP, SDK-style signed requests.

Runs ``mns-gateway serve --workers 2`` and measures, in this order:

0. as a baseline on the same server, PublishMessage/s to a topic without subscriptions,
1. SendMessage/s (wrk replaying one pre-signed 256-byte message),
2. BatchSendMessage of 16 (messages/s),
3. receive + delete cycles/s, one message at a time: wrk signs every request itself (HMAC-SHA1
   in LuaJIT, below) because each DELETE carries the handle the previous receive returned,
4. the same with batches of 16 (BatchReceiveMessage + BatchDeleteMessage, messages/s),
5. long-poll wake-up latency: a receiver waits with ``waitseconds=10``; the time from the
   start of a SendMessage on another connection to the receive's return, p50/p99, split by
   whether the sender and the receiver were served by the same worker process (read from the
   pid inside ``x-mns-request-id``).

Cycles are counted from the queue itself (messages gone between before and after), not from the
client. Beside each rate it prints the gateway's CPU time per operation (all its processes, from
/proc), which depends far less than throughput on what else the shared machine is running.
Targets on the 2-core machine: 2,000 sends/s, 1,000 single cycles/s, 10,000 messages/s with
batches, wake-up p99 under 20 ms. The machine is shared: figures vary between runs.

    .venv/bin/python bench/queues.py [--seconds 10] [--connections 16] [--samples 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import re
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import KEY_ID, SECRET, require_wrk, run_wrk, running_gateway

from tests.mns_http import RawClient

NS = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'
BODY = "x" * 256
ONE = f"<Message {NS}><MessageBody>{BODY}</MessageBody></Message>".encode()
SIXTEEN = (
    f"<Messages {NS}>"
    + f"<Message><MessageBody>{BODY}</MessageBody></Message>" * 16
    + "</Messages>"
).encode()
#: wrk script: receive, then delete what was received, signing each request (HMAC-SHA1 and
#: base64 written out for LuaJIT, which has neither built in).
CYCLE_LUA = r"""
-- Receive + delete cycles with per-request MNS signatures (HMAC-SHA1 in LuaJIT's bit library).
local bit = require("bit")
local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot
local lshift, rshift, rol, tobit = bit.lshift, bit.rshift, bit.rol, bit.tobit

local function sha1(message)
  local h0, h1, h2, h3, h4 = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0
  local bits = #message * 8
  message = message .. "\128" .. string.rep("\0", (55 - #message) % 64)
    .. "\0\0\0\0" .. string.char(band(rshift(bits, 24), 255), band(rshift(bits, 16), 255),
                                 band(rshift(bits, 8), 255), band(bits, 255))
  local w = {}
  for chunk = 1, #message, 64 do
    for i = 0, 15 do
      local a, b, c, d = message:byte(chunk + i * 4, chunk + i * 4 + 3)
      w[i] = bor(lshift(a, 24), lshift(b, 16), lshift(c, 8), d)
    end
    for i = 16, 79 do w[i] = rol(bxor(w[i - 3], w[i - 8], w[i - 14], w[i - 16]), 1) end
    local a, b, c, d, e = h0, h1, h2, h3, h4
    for i = 0, 79 do
      local f, k
      if i < 20 then f, k = bor(band(b, c), band(bnot(b), d)), 0x5A827999
      elseif i < 40 then f, k = bxor(b, c, d), 0x6ED9EBA1
      elseif i < 60 then f, k = bor(band(b, c), band(b, d), band(c, d)), 0x8F1BBCDC
      else f, k = bxor(b, c, d), 0xCA62C1D6 end
      a, b, c, d, e = tobit(rol(a, 5) + f + e + k + w[i]), a, rol(b, 30), c, d
    end
    h0, h1, h2, h3, h4 = tobit(h0 + a), tobit(h1 + b), tobit(h2 + c), tobit(h3 + d), tobit(h4 + e)
  end
  local out = {}
  for _, h in ipairs({h0, h1, h2, h3, h4}) do
    out[#out + 1] = string.char(band(rshift(h, 24), 255), band(rshift(h, 16), 255),
                                band(rshift(h, 8), 255), band(h, 255))
  end
  return table.concat(out)
end

local function xor_with(key, byte)
  return (key:gsub(".", function(c) return string.char(bxor(c:byte(), byte)) end))
end

local function hmac_sha1(key, message)
  key = key .. string.rep("\0", 64 - #key)
  return sha1(xor_with(key, 0x5c) .. sha1(xor_with(key, 0x36) .. message))
end

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function base64(data)
  local out = {}
  for i = 1, #data, 3 do
    local a, b, c = data:byte(i, i + 2)
    local n = lshift(a, 16) + lshift(b or 0, 8) + (c or 0)
    local chars = {}
    for j = 3, 0, -1 do
      local index = band(rshift(n, j * 6), 63) + 1
      chars[#chars + 1] = alphabet:sub(index, index)
    end
    if not b then chars[3], chars[4] = "=", "=" elseif not c then chars[4] = "=" end
    out[#out + 1] = table.concat(chars)
  end
  return table.concat(out)
end

local key_id, secret = os.getenv("BENCH_KEY_ID"), os.getenv("BENCH_SECRET")
local path = "/queues/" .. os.getenv("BENCH_QUEUE") .. "/messages"
local batch = tonumber(os.getenv("BENCH_BATCH"))
local receive_uri = batch > 1 and (path .. "?numOfMessages=" .. batch) or path

local function signed(method, uri, body)
  local date = os.date("!%a, %d %b %Y %H:%M:%S GMT")
  local content_type = body and "text/xml" or ""
  local to_sign = method .. "\n\n" .. content_type .. "\n" .. date
    .. "\nx-mns-version:2015-06-06\n" .. uri
  local headers = {
    ["Date"] = date,
    ["x-mns-version"] = "2015-06-06",
    ["Authorization"] = "MNS " .. key_id .. ":" .. base64(hmac_sha1(secret, to_sign)),
  }
  if body then headers["Content-Type"] = content_type end
  return wrk.format(method, uri, headers, body)
end

pending = {}   -- delete requests waiting for a connection
deleted, received, empty, failed = 0, 0, 0, 0
local in_flight = {}

request = function()
  local next_delete = table.remove(pending, 1)
  if next_delete then
    in_flight[#in_flight + 1] = next_delete[2]
    return next_delete[1]
  end
  return signed("GET", receive_uri)
end

response = function(status, headers, body)
  if status == 200 then
    local handles = {}
    for handle in body:gmatch("<ReceiptHandle>([^<]+)</ReceiptHandle>") do
      handles[#handles + 1] = handle
    end
    received = received + #handles
    if batch == 1 then
      pending[#pending + 1] = {signed("DELETE", path .. "?ReceiptHandle=" .. handles[1]), 1}
    else
      local xml = "<ReceiptHandles>"
      for _, handle in ipairs(handles) do
        xml = xml .. "<ReceiptHandle>" .. handle .. "</ReceiptHandle>"
      end
      pending[#pending + 1] = {signed("DELETE", path, xml .. "</ReceiptHandles>"), #handles}
    end
  elseif status == 204 then
    deleted = deleted + (table.remove(in_flight, 1) or 0)
  elseif status == 404 then
    empty = empty + 1
  else
    failed = failed + 1
  end
end

local threads = {}
setup = function(thread) threads[#threads + 1] = thread end

done = function(summary, latency, requests)
  local totals = {deleted = 0, received = 0, empty = 0, failed = 0}
  for _, thread in ipairs(threads) do
    for name, _ in pairs(totals) do totals[name] = totals[name] + thread:get(name) end
  end
  io.write(string.format('BENCH {"requests": %d, "seconds": %f, "p50_ms": %f, "p99_ms": %f, '
    .. '"deleted": %d, "received": %d, "empty": %d, "failed": %d, "errors": %d}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, totals.deleted, totals.received, totals.empty, totals.failed,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


def create_queue(client: RawClient, name: str) -> None:
    body = f"<Queue {NS}><VisibilityTimeout>300</VisibilityTimeout></Queue>".encode()
    assert client.send("PUT", f"/queues/{name}", body).status == 201


def stored(client: RawClient, name: str) -> int:
    """Messages still in the queue, whatever their state."""
    text = client.send("GET", f"/queues/{name}").body.decode()
    return sum(
        int(re.search(rf"<{e}>(\d+)</{e}>", text).group(1))  # type: ignore[union-attr]
        for e in ("ActiveMessages", "InactiveMessages", "DelayMessages")
    )


def cycles(client: RawClient, name: str, batch: int, args: argparse.Namespace) -> dict[str, float]:
    """wrk running receive+delete cycles for ``args.seconds``; messages deleted per second."""
    before = stored(client, name)
    env = {
        **os.environ,
        "BENCH_KEY_ID": KEY_ID,
        "BENCH_SECRET": SECRET,
        "BENCH_QUEUE": name,
        "BENCH_BATCH": str(batch),
    }
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "cycle.lua"
        script.write_text(CYCLE_LUA)
        command = [
            require_wrk(),
            "-t1",
            f"-c{args.connections}",
            f"-d{args.seconds}s",
            "-s",
            str(script),
            f"http://{client.host}:{client.port}",
        ]
        output = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=args.seconds + 60, check=True
        ).stdout
    line = next(line for line in output.splitlines() if line.startswith("BENCH "))
    figures = json.loads(line[len("BENCH ") :])
    figures["deleted"] = before - stored(client, name)
    figures["per_second"] = figures["deleted"] / figures["seconds"]
    return figures


class KeepAlive:
    """One persistent connection signing requests like the SDK; returns status, headers, body."""

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.connection = http.client.HTTPConnection(client.host, client.port, timeout=60)

    def send(self, method: str, uri: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        headers = self.client.headers_for(method, uri, body)
        self.connection.request(method, uri, body=body, headers=headers)
        response = self.connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()

    def close(self) -> None:
        self.connection.close()


def worker_of(headers: dict[str, str]) -> str:
    """The serving process: ``x-mns-request-id`` carries its pid in characters 8-12."""
    return headers["x-mns-request-id"][8:12]


def wake_latencies(client: RawClient, samples: int) -> dict[str, list[float]]:
    create_queue(client, "latency")
    results: queue.Queue[tuple[float, str, str]] = queue.Queue()
    waiting = threading.Event()

    def receiver() -> None:
        connection = KeepAlive(client)
        for _ in range(samples):
            waiting.set()
            status, headers, body = connection.send(
                "GET", "/queues/latency/messages?waitseconds=10"
            )
            returned = time.perf_counter()
            handle = re.search(rb"<ReceiptHandle>([^<]+)<", body)
            assert status == 200 and handle, body
            results.put((returned, worker_of(headers), handle.group(1).decode()))
        connection.close()

    thread = threading.Thread(target=receiver, daemon=True)
    thread.start()
    split: dict[str, list[float]] = {"same worker": [], "other worker": []}
    deleter = KeepAlive(client)
    for _ in range(samples):
        assert waiting.wait(30)
        waiting.clear()
        time.sleep(0.02)  # let the receive reach the server and go to sleep there
        sender = KeepAlive(client)  # a new connection: either worker may take it
        started = time.perf_counter()
        status, headers, _ = sender.send("POST", "/queues/latency/messages", ONE)
        assert status == 201
        sender.close()
        returned, receiving_worker, handle = results.get(timeout=30)
        same = worker_of(headers) == receiving_worker
        split["same worker" if same else "other worker"].append((returned - started) * 1000)
        deleter.send("DELETE", f"/queues/latency/messages?ReceiptHandle={handle}")
    thread.join(timeout=30)
    deleter.close()
    return split


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def server_cpu_seconds(port: int) -> float:
    """User+system CPU of every process of the gateway on ``port`` (arbiter and workers)."""
    marker = f"serve\0--port\0{port}\0".encode()
    total = 0
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes():
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def measure(client: RawClient, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Each phase's figures plus ``cpu_ms``: server CPU per operation (per message for
    batches), which, unlike throughput, barely depends on what else the machine runs."""
    for name in ("single", "batched"):
        create_queue(client, name)
    assert client.send("PUT", "/topics/baseline", b"<Topic/>").status == 201
    run_wrk(client, "POST", "/queues/single/messages", ONE, seconds=2)  # warm-up
    seconds, connections = args.seconds, args.connections
    phases = {
        "publish": lambda: run_wrk(
            client,
            "POST",
            "/topics/baseline/messages",
            ONE,
            seconds=seconds,
            connections=connections,
        ),
        "send": lambda: run_wrk(
            client, "POST", "/queues/single/messages", ONE, seconds=seconds, connections=connections
        ),
        "batch send": lambda: run_wrk(
            client,
            "POST",
            "/queues/batched/messages",
            SIXTEEN,
            seconds=seconds,
            connections=connections,
        ),
        "cycles": lambda: cycles(client, "single", 1, args),
        "batch cycles": lambda: cycles(client, "batched", 16, args),
    }
    figures: dict[str, dict[str, float]] = {}
    for key, phase in phases.items():
        before = server_cpu_seconds(client.port)
        result = phase()
        if "per_second" not in result:
            result["per_second"] = result["rps"] * (16 if key == "batch send" else 1)
        operations = result["per_second"] * result["seconds"]
        result["cpu_ms"] = (server_cpu_seconds(client.port) - before) / operations * 1000
        figures[key] = result
    return figures


def report(figures: dict[str, dict[str, float]], latencies: dict[str, list[float]]) -> None:
    labels = {
        "publish": "PublishMessage, no subscription (baseline)",
        "send": "SendMessage",
        "batch send": "BatchSendMessage x16 (messages)",
        "cycles": "receive + delete cycles",
        "batch cycles": "batch receive + delete x16 (messages)",
    }
    print(
        f"{'operation':<44}{'per second':>11}{'p50 ms':>8}{'p99 ms':>8}{'CPU ms':>8}"
        f"{'2-core ceiling':>16}  failed  empty"
    )
    for key, label in labels.items():
        f = figures[key]
        failed = f.get("non2xx", f.get("failed", 0)) + f["errors"]
        ceiling = 2000 / f["cpu_ms"] if f["cpu_ms"] else float("nan")
        print(
            f"{label:<44}{f['per_second']:>11.0f}{f['p50_ms']:>8.2f}{f['p99_ms']:>8.2f}"
            f"{f['cpu_ms']:>8.3f}{ceiling:>16.0f}{failed:>8.0f}{f.get('empty', 0):>7.0f}"
        )
    print(
        "\nCPU ms: gateway CPU (all its processes) per operation, per message for batches."
        "\n2-core ceiling: 2 s of CPU per second divided by that, an upper bound for an"
        "\notherwise idle machine (it leaves out wrk's own CPU and the disk's fsync latency)."
    )
    baseline = figures["publish"]["per_second"]
    send_ratio = figures["send"]["per_second"] / baseline
    cycle_ratio = 2 * figures["cycles"]["per_second"] / baseline
    print("\nper-request rate vs the PublishMessage baseline on the same server:")
    print(f"  SendMessage {send_ratio:.2f}, receive+delete requests {cycle_ratio:.2f}")
    everything = [v for values in latencies.values() for v in values]
    print(f"\nlong-poll wake-up, send start -> receive return ({len(everything)} samples):")
    for label, values in (*latencies.items(), ("all", everything)):
        if values:
            print(
                f"  {label:<14}n={len(values):<5}p50 {percentile(values, 0.5):6.2f} ms   "
                f"p99 {percentile(values, 0.99):6.2f} ms   max {max(values):6.2f} ms   "
                f"mean {statistics.fmean(values):6.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    require_wrk()
    with running_gateway("serve", workers=2) as client:
        figures = measure(client, args)
        latencies = wake_latencies(client, args.samples)
    report(figures, latencies)


if __name__ == "__main__":
    main()
