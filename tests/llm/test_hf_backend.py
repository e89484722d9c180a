"""The hf backend batches concurrent prompts and applies the chat template (tiny random model)."""

from pathlib import Path

import pytest

from elitr_bench.judges import parse_judge_spec
from elitr_bench.judges.qa.engine import JudgeItem, judge_items, make_judge
from elitr_bench.llm.hf_backend import chat_text


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    words = ["<pad>", "<eos>", "<unk>", "boxed", "{", "}", "7", "###", "Feedback", ":", "answer"]
    vocab = {w: i for i, w in enumerate(words)}
    raw = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    tok.chat_template = "{% for m in messages %}USER {{ m['content'] }} {% endfor %}ASSISTANT"
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(words),
            n_positions=2048,
            n_embd=16,
            n_layer=1,
            n_head=2,
            pad_token_id=0,
            eos_token_id=1,
        )
    )
    path = tmp_path_factory.mktemp("tiny-judge")
    tok.save_pretrained(path)
    model.save_pretrained(path)
    return path


def test_hf_judge_batches_and_never_invents_scores(tiny_model: Path) -> None:
    config = parse_judge_spec(
        f"hf:{tiny_model},max_tokens=4,batch_size=4,temperature=0,reask=0,cache=memory,progress=0"
    )
    judge = make_judge(config)
    items = [JudgeItem(f"Q{i}?", f"answer {i}", "ref") for i in range(6)]
    run = judge_items(items, config, judge=judge)
    backend = judge.client.backend  # type: ignore[attr-defined]
    assert sum(backend.batches) == 6 and max(backend.batches) > 1
    assert chat_text(backend._tok, "hi").startswith("USER hi")
    # Random weights cannot produce "\boxed{N}": every item is unscored, none gets a number.
    assert run.summary["judge_unscored"] == 6 and run.summary["judge_score"] is None
    assert all(j.samples[0].raw is not None for j in run.judgements)
