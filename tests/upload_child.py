"""Write the rows of the remote tests to a URL (argv: url, storage options as JSON, marker, staging).
With a marker path, stop for good after the second object is uploaded (the marker lists them), so
that the parent can SIGKILL the writer half-way through its upload; with "-" run to the end."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from recordio.mindrecord.storage import store as remote_store  # noqa: E402
from recordio.tools.remote_servers import blob_rows, write_blob_rows  # noqa: E402

url, options, marker, staging = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
os.environ["RECORDIO_CACHE_DIR"] = staging
if marker != "-":
    upload, done = remote_store.Store.upload, []

    def stalling_upload(self, local, target):
        upload(self, local, target)
        done.append(target)
        if len(done) == 2:
            with open(marker + ".tmp", "w") as f:
                f.write("\n".join(done))
            os.replace(marker + ".tmp", marker)
            time.sleep(600)

    remote_store.Store.upload = stalling_upload
write_blob_rows(url, blob_rows(300), 3, storage_options=options)
