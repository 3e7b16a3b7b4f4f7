"""A fake of the two huggingface_hub calls the sglang role's model download makes, for test hosts
that cannot reach a model hub: HfApi().model_info(repo, revision, files_metadata=True) and
snapshot_download(repo, revision).

The hub's repos and their files' sizes are read from /etc/fake-hf/models.json; a repo missing
there is unreachable (model_info raises, as without a network). snapshot_download lays the files
out as huggingface_hub does under $HF_HOME/hub (blobs, snapshots, refs), each blob growing as
NAME.incomplete in four steps over about four seconds in all (so that a server started before it
finished would show, and the download's progress lines have bytes to count), and records in
$HF_HOME/fake-hf-download.json who ran it, with which HF_HOME, the sha256 of the HF_TOKEN it saw
(never the token) and when it started and finished (time.monotonic(), systemd's clock). A file
whose name starts with "fail-" breaks the download halfway through that file (OSError), as a
connection reset would.
"""
import hashlib
import json
import os
import time

MODELS = "/etc/fake-hf/models.json"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class _Sibling:
    def __init__(self, rfilename, size):
        self.rfilename, self.size = rfilename, size


class _ModelInfo:
    def __init__(self, repo_id, siblings):
        self.id, self.sha, self.siblings = repo_id, COMMIT, siblings


def _files(repo_id):
    with open(MODELS) as f:
        models = json.load(f)
    if repo_id not in models:
        raise ConnectionError(f"fake hub: cannot reach https://huggingface.co/api/models/{repo_id}")
    return models[repo_id]


class HfApi:
    def model_info(self, repo_id, revision=None, files_metadata=False):
        return _ModelInfo(repo_id, [_Sibling(name, size if files_metadata else None)
                                    for name, size in _files(repo_id).items()])


def snapshot_download(repo_id, revision=None):
    started = time.monotonic()
    files = _files(repo_id)
    repo = os.path.join(os.environ["HF_HOME"], "hub", "models--" + repo_id.replace("/", "--"))
    snapshot = os.path.join(repo, "snapshots", COMMIT)
    for sub in ("blobs", "refs", snapshot):
        os.makedirs(os.path.join(repo, sub), exist_ok=True)
    step = 1.0 / max(len(files), 1)
    for name, size in files.items():
        blob = os.path.join(repo, "blobs", hashlib.sha256(f"{repo_id}/{name}".encode()).hexdigest())
        with open(blob + ".incomplete", "wb") as f:
            for quarter in range(1, 5):
                time.sleep(step)
                if name.startswith("fail-") and quarter == 3:
                    raise OSError(f"fake hub: connection reset while downloading {name}")
                f.truncate(size * quarter // 4)
        os.replace(blob + ".incomplete", blob)
        link = os.path.join(snapshot, name)
        if not os.path.islink(link):
            os.symlink(os.path.join("..", "..", "blobs", os.path.basename(blob)), link)
    with open(os.path.join(repo, "refs", revision or "main"), "w") as f:
        f.write(COMMIT)
    token = os.environ.get("HF_TOKEN")
    record = {"uid": os.getuid(), "hf_home": os.environ["HF_HOME"], "repo": repo_id,
              "token_sha256": hashlib.sha256(token.encode()).hexdigest() if token else None,
              "started": started, "finished": time.monotonic()}
    with open(os.path.join(os.environ["HF_HOME"], "fake-hf-download.json"), "w") as f:
        json.dump(record, f)
    return snapshot
