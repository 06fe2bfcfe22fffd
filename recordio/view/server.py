"""``recordio view``'s server: uvicorn on a socket bound here, so the URL printed names the real port."""

from __future__ import annotations

import ipaddress
import socket
import threading
import webbrowser

from recordio.view.extra import requires_view


def is_loopback(host) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run(path, *, host, port, open_browser, storage_options, cache_dir, announce):
    with requires_view():
        import uvicorn
    from recordio.view.app import build as create_app

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)                      # connections wait in the backlog until uvicorn accepts them
    port = sock.getsockname()[1]
    allowed = None
    if not is_loopback(host):
        announce(f"recordio view: warning: listening on {host}, not on a loopback address: anyone who can "
                 f"reach this machine can read the dataset")
        allowed = ["*"]
    app = create_app(path, storage_options=storage_options, cache_dir=cache_dir, allowed_hosts=allowed)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/"
    announce(f"recordio view: serving {path} at {url} (Ctrl-C stops)")
    if app.state.source.error:
        announce(f"recordio view: the dataset does not open: {app.state.source.error}")
    if open_browser:
        threading.Timer(0.5, webbrowser.open, [url]).start()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    server.run(sockets=[sock])
    return 0
