#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a GGUF of the llama architecture in F16 with the shape of a real
model (by default Llama 3.2 1B: 16 layers, 2048 wide, 32 heads of which 8
for keys and values, 8192 in the feed-forward layers) and meaningless
weights, for bench/llama_bench.py: every kernel, buffer and submission of
a model that size, none of its text.  Each tensor repeats one random block
of 8191 values, so that the file compresses to almost nothing and can be
carried to another machine.  scripts/llama.sh quantizes it to Q4_0.

Needs numpy and Debian's python3-gguf (scripts/llama.sh unpacks it).

  llama_model.py OUT.gguf [--layers N] [--width N] [--ffn N] [--heads N]
                          [--kv-heads N] [--vocab N] [--context N]
"""
import argparse

import numpy
import gguf


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('out')
    ap.add_argument('--layers', type=int, default=16)
    ap.add_argument('--width', type=int, default=2048)
    ap.add_argument('--ffn', type=int, default=8192)
    ap.add_argument('--heads', type=int, default=32)
    ap.add_argument('--kv-heads', type=int, default=8)
    ap.add_argument('--vocab', type=int, default=32000)
    ap.add_argument('--context', type=int, default=4096)
    a = ap.parse_args()
    if a.width % a.heads or a.heads % a.kv_heads:
        ap.error('--width must be a multiple of --heads, --heads of --kv-heads')
    head = a.width // a.heads
    block = numpy.random.default_rng(7).standard_normal(8191, dtype=numpy.float32) * 0.02

    w = gguf.GGUFWriter(a.out, 'llama')
    w.add_name('gpud-bench-llama')
    w.add_context_length(a.context)
    w.add_embedding_length(a.width)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ffn)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(head)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_vocab_size(a.vocab)
    w.add_tokenizer_model('test')
    w.add_token_list(['t%d' % i for i in range(a.vocab)])
    w.add_token_types([1] * a.vocab)
    w.add_token_scores([0.0] * a.vocab)
    w.add_add_bos_token(False)

    def tensor(name, cols, rows=None):
        # GGUF names the innermost dimension first, numpy the outermost
        shape = (rows, cols) if rows else (cols,)
        data = numpy.resize(block, rows * cols if rows else cols)
        w.add_tensor(name, data.astype(numpy.float16 if rows else numpy.float32).reshape(shape))

    kv = head * a.kv_heads
    tensor('token_embd.weight', a.width, a.vocab)
    tensor('output_norm.weight', a.width)
    tensor('output.weight', a.width, a.vocab)
    for i in range(a.layers):
        b = 'blk.%d.' % i
        tensor(b + 'attn_norm.weight', a.width)
        tensor(b + 'attn_q.weight', a.width, a.width)
        tensor(b + 'attn_k.weight', a.width, kv)
        tensor(b + 'attn_v.weight', a.width, kv)
        tensor(b + 'attn_output.weight', a.width, a.width)
        tensor(b + 'ffn_norm.weight', a.width)
        tensor(b + 'ffn_gate.weight', a.width, a.ffn)
        tensor(b + 'ffn_up.weight', a.width, a.ffn)
        tensor(b + 'ffn_down.weight', a.ffn, a.width)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == '__main__':
    main()
