"""Generates the tiny random Qwen2 models the real-tools tests serve with vLLM's CPU build, offline.

Usage: make-test-models.py OUT_DIR

Writes OUT_DIR/hub/models--<org>--<name>/ in the Hugging Face cache layout (refs/main and
snapshots/<commit>/), which is what liftoff's preflight and vLLM's offline loader both read:
- liftoff-test/tiny-qwen2: head_dim 64, which vLLM's CPU attention supports;
- liftoff-test/tiny-qwen2-hd16: head_dim 16, which loads and answers /health but fails every request.
The weights are random (seeded) and split into 16 safetensors shards, so a load shows shard progress.
Nothing is downloaded: the tokenizer is a byte-level BPE trained here on a few lines of text.
"""

import hashlib
import json
import os
import shutil
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

VOCAB = 512
SHARDS = 16
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXT = [
    "Reply with one word: ready? Ready. Hello! This is a tiny model serving on a CPU.",
    "The quick brown fox jumps over the lazy dog. 0123456789 liftoff ray vllm serve.",
    "Tensor parallel, pipeline parallel, shards, weights, loaded, healthy, tokens per second.",
]


def tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - 16,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TEXT * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def write_model(out: str, repo: str, head_dim: int) -> None:
    heads = 4
    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=heads * head_dim,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        head_dim=head_dim,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
        eos_token_id=2,
        pad_token_id=0,
    )
    torch.manual_seed(13)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    tok = tokenizer()
    config.eos_token_id = tok.convert_tokens_to_ids("<|im_end|>")
    config.pad_token_id = tok.convert_tokens_to_ids("<|endoftext|>")
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id

    repo_dir = os.path.join(out, "hub", "models--" + repo.replace("/", "--"))
    tmp = repo_dir + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    staging = os.path.join(tmp, "staging")
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    model.save_pretrained(staging, max_shard_size=max(1, total // SHARDS + 1), safe_serialization=True)
    tok.save_pretrained(staging)
    # The snapshot id is the content's hash, as a commit id would be: same inputs, same folder.
    digest = hashlib.sha1()
    for name in sorted(os.listdir(staging)):
        with open(os.path.join(staging, name), "rb") as f:
            digest.update(name.encode() + f.read())
    commit = digest.hexdigest()
    os.makedirs(os.path.join(tmp, "snapshots"))
    os.rename(staging, os.path.join(tmp, "snapshots", commit))
    os.makedirs(os.path.join(tmp, "refs"))
    with open(os.path.join(tmp, "refs", "main"), "w") as f:
        f.write(commit)
    shutil.rmtree(repo_dir, ignore_errors=True)
    os.rename(tmp, repo_dir)
    shards = [n for n in os.listdir(os.path.join(repo_dir, "snapshots", commit)) if n.endswith(".safetensors")]
    print(json.dumps({"repo": repo, "dir": repo_dir, "commit": commit, "shards": len(shards), "headDim": head_dim}))


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make-test-models.py OUT_DIR")
    out = os.path.abspath(sys.argv[1])
    write_model(out, "liftoff-test/tiny-qwen2", 64)
    write_model(out, "liftoff-test/tiny-qwen2-hd16", 16)


if __name__ == "__main__":
    main()
