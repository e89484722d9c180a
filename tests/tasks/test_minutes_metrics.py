"""Optional minutes metrics: BARTScore and BERTScore on tiny random models, their offline errors."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from elitr_bench.tasks import minutes_metrics as mm


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 1-layer BART with a word-level tokenizer: nothing downloaded."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tiny-bart")
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    text = "the team will meet on monday to discuss the ASR pipeline and the deliverable"
    tok.train_from_iterator(
        [text], trainers.WordLevelTrainer(special_tokens=["<pad>", "<s>", "</s>", "<unk>"])
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    fast.save_pretrained(out)
    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=fast.vocab_size, d_model=16, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=32, pad_token_id=fast.pad_token_id,
        bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
        decoder_start_token_id=fast.eos_token_id,
    )  # fmt: skip
    BartForConditionalGeneration(config).save_pretrained(out)
    return out


def test_bartscore_is_the_mean_of_both_directions(tiny_bart: Path) -> None:
    import torch
    from transformers import AutoTokenizer, BartForConditionalGeneration

    minutes, ref = "the team will meet on monday", "discuss the ASR pipeline"
    model = str(tiny_bart)
    # Independent computation of BARTScore's unit: mean log p(target token | source).
    tokenizer = AutoTokenizer.from_pretrained(model)
    bart = BartForConditionalGeneration.from_pretrained(model).eval()
    src = tokenizer(ref, return_tensors="pt")
    tgt = tokenizer(minutes, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = bart(**src, labels=tgt).logits
    logp = torch.log_softmax(logits, dim=-1).gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
    precision = float(logp.mean())
    assert mm.bart_loglik(ref, minutes, model) == pytest.approx(precision, abs=1e-5)
    recall = mm.bart_loglik(minutes, ref, model)
    assert mm.bartscore(minutes, [ref], model) == pytest.approx((precision + recall) / 2)
    # Two references: their mean. Texts longer than the model's positions are truncated.
    two = mm.bartscore(minutes, [ref, minutes], model)
    assert two == pytest.approx(
        (mm.bartscore(minutes, [ref], model) + mm.bartscore(minutes, [minutes], model)) / 2
    )
    assert math.isfinite(mm.bartscore(" ".join([minutes] * 20), [ref], model))


def test_bart_model_missing_is_one_line() -> None:
    with pytest.raises(mm.MetricUnavailableError) as err:
        mm.bartscore("a", ["b"], "/nonexistent/bart")
    assert "\n" not in str(err.value) and "bartscore_model=<local BART folder>" in str(err.value)


def test_bertscore_model_not_available_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import bert_score  # noqa: F401  # the dev extra: a failure, never a skip

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    mm._bert_scorer.cache_clear()
    with pytest.raises(mm.MetricUnavailableError) as err:
        mm.bertscore_f1("a b", ["c d"], "roberta-large")
    message = str(err.value)
    assert message.startswith("bertscore: model 'roberta-large' is not available")
    assert "\n" not in message and "bertscore_model=" in message


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer BERT with a word-piece vocabulary written here: nothing downloaded."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    out = tmp_path_factory.mktemp("tiny-bert")
    words = [
        "the",
        "team",
        "will",
        "meet",
        "on",
        "monday",
        "to",
        "discuss",
        "asr",
        "pipeline",
        "and",
        "deliverable",
    ]
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (out / "vocab.txt").write_text("\n".join([*special, *words]) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(str(out / "vocab.txt"), model_max_length=64)
    tokenizer.save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    BertModel(config).save_pretrained(out)
    return out


def test_bertscore_is_greedy_cosine_matching_on_a_real_model(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our BERTScore F1 through bert-score's real scorer, against the formula by hand.

    BERTScore (Zhang et al., 2020): unit-normalised token embeddings of the last used
    layer; precision is the mean over the candidate's tokens of the best cosine with any
    reference token, recall the converse, F1 their harmonic mean, then rescaled as
    ``(F - b) / (1 - b)``. bert-score leaves [CLS]/[SEP] out of the means (weight 0) but
    lets them be matched. Only two things are set up for a model it does not know: its
    layer count and a baseline file (ours, one row per layer).
    """
    import bert_score  # the dev extra (minutes-bertscore): a failure, never a skip
    import bert_score.utils as bert_utils
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = str(tiny_bert)
    monkeypatch.setitem(bert_utils.model2layers, model, 2)
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n2,0.5,0.4,0.25\n")

    class WithOurBaseline(bert_score.BERTScorer):  # type: ignore[misc, name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs, device="cpu")
            self.baseline_path = str(baseline)

    monkeypatch.setattr(bert_score, "BERTScorer", WithOurBaseline)
    mm._bert_scorer.cache_clear()
    minutes = "the team will meet on monday"
    references = ["discuss the asr pipeline on monday", "the deliverable and the team"]
    got = mm.bertscore_f1(minutes, references, model)
    mm._bert_scorer.cache_clear()

    tokenizer = AutoTokenizer.from_pretrained(model)
    bert = AutoModel.from_pretrained(model).eval()

    def embed(text: str) -> tuple[torch.Tensor, torch.Tensor]:
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            hidden = bert(input_ids=ids).last_hidden_state[0]
        content = (ids[0] != tokenizer.cls_token_id) & (ids[0] != tokenizer.sep_token_id)
        return hidden / hidden.norm(dim=-1, keepdim=True), content

    def rescaled_f1(candidate: str, reference: str) -> float:
        (cand, cand_content), (ref, ref_content) = embed(candidate), embed(reference)
        cosine = cand @ ref.T
        precision = cosine.max(dim=1).values[cand_content].mean()
        recall = cosine.max(dim=0).values[ref_content].mean()
        f1 = float(2 * precision * recall / (precision + recall))
        return (f1 - 0.25) / (1 - 0.25)  # the F column of the baseline's layer-2 row

    by_hand = [rescaled_f1(minutes, r) for r in references]
    assert by_hand[0] != pytest.approx(by_hand[1], abs=1e-3)  # the mean is over distinct F1s
    assert got == pytest.approx(sum(by_hand) / 2, abs=1e-5)


def test_bertscore_averages_references_and_rescales(monkeypatch: pytest.MonkeyPatch) -> None:
    import bert_score
    import torch

    seen: dict[str, Any] = {}

    class FakeScorer:
        def __init__(self, **kwargs: Any) -> None:
            seen.update(kwargs)

        def score(self, cands: list[str], refs: list[str]) -> tuple[Any, Any, Any]:
            seen["pairs"] = list(zip(cands, refs, strict=True))
            f1 = torch.tensor([0.2, 0.4])
            return f1, f1, f1

    monkeypatch.setattr(bert_score, "BERTScorer", FakeScorer)
    mm._bert_scorer.cache_clear()
    assert mm.bertscore_f1("m", ["r1", "r2"], "roberta-large") == pytest.approx(0.3)
    assert seen["rescale_with_baseline"] is True and seen["lang"] == "en"
    assert seen["pairs"] == [("m", "r1"), ("m", "r2")]
    mm._bert_scorer.cache_clear()


def test_missing_metric_model_fails_before_generation(tiny_bart: Path) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    manager = TaskManager(
        include_defaults=False,
        metadata={"judge": "none", "bartscore": True, "bartscore_model": "/nonexistent/bart"},
    )
    with pytest.raises(mm.MetricUnavailableError, match="bartscore: model '/nonexistent/bart'"):
        simple_evaluate(model="elitr-replay", model_args="system=gpt4", tasks=["automin23_en"],
                        task_manager=manager, limit=1)  # fmt: skip
    manager = TaskManager(
        include_defaults=False,
        metadata={"judge": "none", "bartscore": True, "bartscore_model": str(tiny_bart)},
    )
    result = simple_evaluate(
        model="elitr-replay", model_args="system=gpt4", tasks=["automin23_en"],
        task_manager=manager, limit=1,
    )  # fmt: skip
    assert result is not None
    assert math.isfinite(result["results"]["automin23_en"]["bartscore,none"])
