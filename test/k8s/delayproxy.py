"""A TCP proxy that delays every byte by a fixed latency in both directions
(bandwidth unchanged): put between kube-scheduler and kube-apiserver, its
Bindings answer late and its informers hear of them late, while it keeps
scheduling from its cache (issue 15, "race-freedom"). It can also hold what
the client sends (hold/release: a gate on the upstream direction, `held`
the bytes waiting at it): put between gpushare-node and the apiserver, the
agent's List during an Allocate waits while the test changes the cluster
(issue 31). TLS passes through untouched (no HTTP is parsed); asyncio on
its own thread."""
import asyncio
import socket
import threading
import time


class DelayProxy:
    def __init__(self, upstream_port, delay_s, host="127.0.0.1"):
        self.upstream = (host, upstream_port)
        self.delay = delay_s
        self.loop = asyncio.new_event_loop()
        self.connections = 0
        sock = socket.socket()
        sock.bind((host, 0))
        self.port = sock.getsockname()[1]
        self._sock = sock
        self._ready = threading.Event()
        self.held = 0  # bytes the client sent that wait at the closed gate
        self._thread = threading.Thread(target=self._run, name="delayproxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self):
        asyncio.set_event_loop(self.loop)

        async def start():
            self._gate = asyncio.Event()
            self._gate.set()
            self._server = await asyncio.start_server(self._conn, sock=self._sock)
            self._ready.set()
        self.loop.run_until_complete(start())
        self.loop.run_forever()

    async def _pipe(self, reader, writer, gated=False):
        """Bytes read at t are written at t + delay, in order (gated: and
        not while the gate is closed)."""
        q = asyncio.Queue()

        async def send():
            while True:
                due, data = await q.get()
                if data is None:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if gated and not self._gate.is_set():
                    self.held += len(data)
                    await self._gate.wait()
                    self.held -= len(data)
                writer.write(data)
                await writer.drain()
        sender = asyncio.ensure_future(send())
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                await q.put((time.monotonic() + self.delay, data))
        except (ConnectionError, OSError):
            pass
        await q.put((0, None))
        try:
            await sender
            writer.close()
        except (ConnectionError, OSError):
            pass

    async def _conn(self, creader, cwriter):
        self.connections += 1
        try:
            ureader, uwriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(self._pipe(creader, uwriter, gated=True), self._pipe(ureader, cwriter),
                             return_exceptions=True)

    def _in_loop(self, fn):
        """Runs fn on the proxy's loop and returns once it has run."""
        async def call():
            fn()
        asyncio.run_coroutine_threadsafe(call(), self.loop).result(10)

    def hold(self):
        """Closes the gate: what clients send from now on waits."""
        self._in_loop(self._gate.clear)

    def release(self):
        """Opens the gate: what waited goes on, in order."""
        self._in_loop(self._gate.set)

    def close(self):
        def stop():
            self._server.close()
            self.loop.stop()
        self.loop.call_soon_threadsafe(stop)
        self._thread.join(10)
