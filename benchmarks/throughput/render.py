"""The throughput command's tables for people (--json prints the result itself)."""

from __future__ import annotations

from benchmarks.output import format_number


def _sides(result: dict) -> list[dict]:
    """Ours, then the anchor where there is one."""
    return [side for side in (result["ours"], result["anchor"]) if side is not None]


def _preamble(result: dict) -> list[str]:
    """The line above the table: what ran, where, how long."""
    training = result["mode"] == "training"
    what = f"{result['precision']}, " if training else "input pipelines only, "
    unit = "steps" if training else "batches"
    return [
        f"{result['recipe']} ({result['model']}), global batch {result['global_batch_size']}, "
        f"{what}{result['device']}, {result['warmup_steps']} warm-up + "
        f"{result['steps']} measured {unit}",
        "",
    ]


def _tokens(result: dict) -> list[str]:
    """What tokens/s counts, where the family counts tokens."""
    tokens = result.get("tokens_per_batch")
    if tokens is None:
        return []
    per_example = tokens / result["global_batch_size"]
    return [
        f"tokens/s: examples/s x {per_example:g} tokens an example (a synthetic global batch "
        f"of {result['global_batch_size']:,} holds {tokens:,} tokens a side, padding included)"
    ]


def _tokens_cell(result: dict, side: dict) -> str:
    """The tokens/s cell, where the family counts tokens; none otherwise."""
    if result.get("tokens_per_batch") is None:
        return ""
    return f" {format_number(side['tokens_per_s'])} |"


def _flops_cells(side: dict) -> str:
    flops = side["flops_per_example"]
    gflops = "-" if flops is None else f"{flops / 1e9:.2f} G"
    return f"{gflops} | {format_number(side['mfu'], '.1%')}"


def _xla_note(ours: dict, anchor: dict) -> list[str]:
    """A line when the two sides do not use the same compiler."""
    if ours["xla"] == anchor["xla"]:
        return []
    on = {True: "on", False: "off"}
    return [
        f"note: XLA differs (ours {on[ours['xla']]}, anchor {on[anchor['xla']]}); "
        f"--gin_param='train.jit_compile = {anchor['xla']}' compares the same compiler"
    ]


def _comparison(result: dict) -> list[str]:
    """Ratio and parameter counts of ours against the anchor, or why there is no anchor."""
    ours, anchor = result["ours"], result["anchor"]
    if anchor is None:
        return [result["anchor_note"]]
    match = "match" if result["params_match"] else "DIFFER"
    rates = "examples/s" if result.get("tokens_per_batch") is None else "examples/s, tokens/s"
    return [
        f"ratio ours / anchor ({rates}): {result['ratio_ours_to_anchor']:.3f}",
        f"parameter counts {match}: {ours['params']:,} vs {anchor['params']:,}",
        *_xla_note(ours, anchor),
    ]


def render_training(result: dict) -> str:
    """Markdown table: ours (and the anchor), then peak, comparison and methods."""
    tokens = result.get("tokens_per_batch") is not None
    rows = [
        f"| | examples/s |{' tokens/s |' if tokens else ''} ms/step | FLOPs/example | MFU "
        "| params | XLA |",
        f"|---|---|{'---|' if tokens else ''}---|---|---|---|---|",
    ]
    for side in _sides(result):
        rows.append(
            f"| {side['name']} | {format_number(side['examples_per_s'])} |"
            f"{_tokens_cell(result, side)} {format_number(side['ms_per_step'])} "
            f"| {_flops_cells(side)} "
            f"| {side['params']:,} | {'on' if side['xla'] else 'off'} |"
        )
    footer = [
        "",
        f"device peak: {result['peak_flops_per_s'] / 1e9:,.1f} GFLOP/s ({result['peak_method']})",
        *_comparison(result),
        *_tokens(result),
        f"FLOPs: {result['flops_method']}",
        f"input: {result['input']}",
    ]
    return "\n".join(_preamble(result) + rows + footer)


def render_input(result: dict) -> str:
    """Markdown table of both pipelines' images/s, then the ratio."""
    rows = ["| | images/s | ms/batch |", "|---|---|---|"]
    for side in _sides(result):
        rows.append(
            f"| {side['name']} | {format_number(side['images_per_s'])} "
            f"| {format_number(side['ms_per_batch'])} |"
        )
    footer = [
        "",
        f"records: {result['data_dir']} ({result['train_files']} train files), "
        f"decode + random resized crop + flip to {result['image_size']}x{result['image_size']} "
        f"{result['image_dtype']}",
        f"ratio ours / anchor (images/s): {result['ratio_ours_to_anchor']:.3f}",
    ]
    return "\n".join(_preamble(result) + rows + footer)


def render(result: dict) -> str:
    """The table for the result's mode."""
    return render_input(result) if result["mode"] == "input_only" else render_training(result)
