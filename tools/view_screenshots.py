"""The screenshots of docs/view.md: a small dataset of scikit-image's sample photos, served by
``recordio view`` and photographed by Debian's headless Chromium (Selenium and chromium-driver).

    python -m recordio.tools.view_screenshots docs/
"""

import io
import os
import socket
import sys
import tempfile
import threading

NAMES = ["astronaut", "rocket", "chelsea", "moon", "cat", "hubble_deep_field", "immunohistochemistry",
         "coins", "retina", "colorwheel", "camera", "coffee"]
SHOTS = {"view-overview.png": "/", "view-rows.png": "/rows?where=label%3C3&limit=8",
         "view-grid.png": "/rows?view=grid", "view-row.png": "/row/3"}


def write(folder):
    import numpy as np
    from PIL import Image
    from skimage import data

    import recordio

    rows = []
    for i in range(96):
        name = NAMES[i % len(NAMES)]
        img = Image.fromarray(np.asarray(getattr(data, name)())).convert("RGB")
        img.thumbnail((160, 160))
        out = io.BytesIO()
        img.save(out, "JPEG", quality=85)
        rows.append({"image": out.getvalue(), "label": i % len(NAMES) % 5, "name": name, "score": round((i * 37 % 100) / 100, 2),
                     "tokens": np.random.default_rng(i).integers(0, 32_000, 64).astype(np.int32)})
    path = os.path.join(folder, "photos.mindrecord")
    with recordio.FileWriter(path, 2) as writer:
        writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}, "name": {"type": "string"},
                           "score": {"type": "float32"}, "tokens": {"type": "int32", "shape": [-1]}},
                          "scikit-image's sample photos, a label, a score and token ids")
        writer.add_index(["label", "name", "score"])
        writer.write_raw_data(rows)
    return path + "0"


def main(argv=None):
    import uvicorn
    from PIL import Image
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from recordio.view import create_app

    out = (argv or sys.argv[1:] or ["docs"])[0]
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(write(folder))
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1100,720", "--hide-scrollbars"):
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            for name, page in SHOTS.items():
                driver.get(url + page)
                driver.execute_script("return Promise.all([...document.images].map(i => i.decode().catch(() => 0)))")
                shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
                shot.quantize(128).save(os.path.join(out, name), optimize=True)        # small files for the repo
                print(os.path.join(out, name))
        finally:
            driver.quit()
            server.should_exit = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
