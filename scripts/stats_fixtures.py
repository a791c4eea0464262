#!/usr/bin/env python3
"""Writes the reference fixtures of the iolens-stats crate to crates/iolens-stats/tests/fixtures/.

    python3 scripts/stats_fixtures.py

Run with any Python 3.11+: without the pinned packages it makes a venv (IOLENS_STATS_VENV,
default /tmp/iolens-stats-venv), installs scripts/requirements-stats.txt there and runs itself
again inside it. Every data set comes from a fixed seed, so a rerun rewrites the same files.
The Rust tests read only these files: Python is needed to regenerate them, never to test.

References written per model:
- ANOVA: statsmodels `anova_lm(ols(formula, data).fit(), typ=2)` when the design has full rank.
  The same table is also computed from nested OLS fits (SS of a term = SSR of the model without
  the term and without the higher-order terms containing it, minus SSR of the model without
  only those higher-order terms) and the script stops if the two disagree.
  When cells are missing the design is rank deficient, and statsmodels' typ=2 (a Wald test on
  pinv-estimated, non-estimable coefficients) no longer equals that definition: its df counts
  columns instead of rank and its sums of squares do not come from any model comparison. There
  the reference is the nested-fit table (statsmodels OLS fits, df = rank differences, F against
  the full model's residual mean square), and statsmodels' typ=2 output is kept beside it under
  `statsmodels_typ2_wald` for the record.
- R², adjusted R² and residuals of the full statsmodels fit.
- scipy.stats.shapiro on the residuals, scipy.stats.levene(center="median") (Brown-Forsythe) on
  the residuals grouped by the cells of the listed factors.
- Level means, recommendations and a backward elimination of interactions, computed here from
  pandas group means and the tables above.
Plus scipy references for summaries (t interval), Pearson correlation, Shapiro-Wilk and
Brown-Forsythe on plain samples.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "scripts" / "requirements-stats.txt"
OUT = ROOT / "crates" / "iolens-stats" / "tests" / "fixtures"
VENV = Path(os.environ.get("IOLENS_STATS_VENV", "/tmp/iolens-stats-venv"))


def ensure_venv() -> None:
    """Re-executes this script inside the venv holding the pinned reference packages."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)], check=True
    )
    os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])


ensure_venv()

import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import statsmodels.formula.api as smf  # noqa: E402
from scipy import stats  # noqa: E402
from statsmodels.stats.anova import anova_lm  # noqa: E402

ALPHA = 0.05
RESPONSE = "y"


# ---------------------------------------------------------------------------------------------
# Data sets


def factorial(levels, reps, rng, missing=()):
    """Rows of a full factorial (minus the `missing` cells); `reps` is a count or a (lo, hi) range."""
    rows = []
    for cell in itertools.product(*levels.values()):
        if cell in missing:
            continue
        count = reps if isinstance(reps, int) else int(rng.integers(reps[0], reps[1] + 1))
        rows.extend([cell] * count)
    return pd.DataFrame(rows, columns=list(levels), dtype=object)


def positive_response(df, rng, main_scale, interactions, noise, base=5.0):
    """A throughput-like response: exp(base + level effects + chosen interactions + noise).

    Multiplicative effects make the log response the right scale for ANOVA, so the fixtures
    exercise both the raw scale (skewed residuals) and the log scale.
    """
    log_y = np.full(len(df), base)
    for factor, scale in main_scale.items():
        effects = {level: rng.normal(0, scale) for level in sorted(df[factor].unique())}
        log_y += df[factor].map(effects).to_numpy(dtype=float)
    for (first, second), scale in interactions.items():
        effects = {
            cell: rng.normal(0, scale)
            for cell in itertools.product(sorted(df[first].unique()), sorted(df[second].unique()))
        }
        log_y += np.array([effects[(a, b)] for a, b in zip(df[first], df[second])])
    log_y += rng.normal(0, noise, len(df))
    # Rounded so that the CSV holds exactly the values the references were computed from.
    return np.round(np.exp(log_y), 4)


# ---------------------------------------------------------------------------------------------
# Models


def formula(response, main, interactions):
    terms = [f"C({factor})" for factor in main]
    terms += [":".join(f"C({factor})" for factor in term) for term in interactions]
    return f"{response} ~ " + (" + ".join(terms) if terms else "1")


def term_name(statsmodels_name):
    return re.sub(r"C\((\w+)\)", r"\1", statsmodels_name)


def fit(df, response, main, interactions):
    with warnings.catch_warnings():
        # Rank-deficient designs warn; pinv handles them and df_resid uses the rank.
        warnings.simplefilter("ignore")
        return smf.ols(formula(response, main, interactions), df).fit()


def nested_type2(df, response, main, interactions, full):
    """Type II by model comparison; F and p against the full model's residual mean square."""
    terms = [(factor,) for factor in main] + [tuple(term) for term in interactions]
    rows = []
    for term in terms:
        higher = [other for other in terms if set(term) < set(other)]
        base_terms = [other for other in terms if other not in higher]
        reduced_terms = [other for other in base_terms if other != term]

        def split(ts):
            return [t[0] for t in ts if len(t) == 1], [list(t) for t in ts if len(t) > 1]

        base = fit(df, response, *split(base_terms))
        reduced = fit(df, response, *split(reduced_terms))
        sum_sq = reduced.ssr - base.ssr
        dof = reduced.df_resid - base.df_resid
        row = {"term": ":".join(term), "df": float(dof), "sum_sq": float(sum_sq)}
        if dof > 0:
            row["mean_sq"] = sum_sq / dof
            row["F"] = row["mean_sq"] / full.scale
            row["p"] = float(stats.f.sf(row["F"], dof, full.df_resid))
        else:
            row["mean_sq"] = None
            row["F"] = None
            row["p"] = None
        rows.append(row)
    rows.append(residual_row(full))
    return rows


def residual_row(full):
    return {
        "term": "Residual",
        "df": float(full.df_resid),
        "sum_sq": float(full.ssr),
        "mean_sq": float(full.ssr / full.df_resid),
        "F": None,
        "p": None,
    }


def statsmodels_type2(full):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = anova_lm(full, typ=2)
    rows = []
    for name, row in table.iterrows():
        if name == "Residual":
            continue
        rows.append(
            {
                "term": term_name(name),
                "df": float(row["df"]),
                "sum_sq": float(row["sum_sq"]),
                "mean_sq": float(row["sum_sq"] / row["df"]),
                "F": float(row["F"]),
                "p": float(row["PR(>F)"]),
            }
        )
    rows.append(residual_row(full))
    return rows


def type2_table(df, response, main, interactions):
    full = fit(df, response, main, interactions)
    nested = nested_type2(df, response, main, interactions, full)
    full_rank = np.linalg.matrix_rank(full.model.exog) == full.model.exog.shape[1]
    if not full_rank:
        return full, nested, False
    reference = statsmodels_type2(full)
    by_term = {row["term"]: row for row in nested}
    for row in reference:
        other = by_term[row["term"]]
        for key in ("df", "sum_sq", "F", "p"):
            if row[key] is None:
                continue
            if not np.isclose(row[key], other[key], rtol=1e-8, atol=1e-12):
                raise SystemExit(
                    f"typ=2 and nested fits disagree on {row['term']} {key}: "
                    f"{row[key]} vs {other[key]}"
                )
    return full, reference, True


def reduce_interactions(df, response, main, interactions, alpha):
    """Backward elimination: drop the least significant removable interaction while p > alpha.

    A term is removable only when no other remaining interaction contains it (marginality);
    main effects always stay.
    """
    current = [list(term) for term in interactions]
    steps = []
    while True:
        _, table, _ = type2_table(df, response, main, current)
        p_of = {row["term"]: row["p"] for row in table}
        removable = [
            term
            for term in current
            if not any(set(term) < set(other) for other in current)
        ]
        if not removable:
            break
        def p_value(term):
            # A term left with no degrees of freedom explains nothing: treated as p = 1.
            p = p_of[":".join(term)]
            return 1.0 if p is None else p

        worst = max(removable, key=p_value)
        worst_p = p_value(worst)
        if worst_p <= alpha:
            break
        steps.append({"removed": ":".join(worst), "p": worst_p})
        current.remove(worst)
    return current, steps


# ---------------------------------------------------------------------------------------------
# Per-model references


def model_reference(df, name, main, interactions, log, cell_factors):
    response = RESPONSE
    data = df
    if log:
        data = df.assign(log_y=np.log(df[RESPONSE].astype(float)))
        response = "log_y"
    full, table, full_rank = type2_table(data, response, main, interactions)
    residuals = full.resid.to_numpy()
    shapiro = stats.shapiro(residuals)
    groups = [
        group.to_numpy()
        for _, group in pd.Series(residuals).groupby([df[f] for f in cell_factors], sort=True)
    ]
    levene = stats.levene(*groups, center="median")
    reference = {
        "name": name,
        "main_effects": main,
        "interactions": [list(term) for term in interactions],
        "log_response": log,
        "full_rank": bool(full_rank),
        "reference": "statsmodels anova_lm typ=2" if full_rank else "nested statsmodels OLS fits",
        "table": table,
        "r_squared": float(full.rsquared),
        "adj_r_squared": float(full.rsquared_adj),
        "residuals": [float(v) for v in residuals],
        "shapiro_wilk": {"statistic": float(shapiro.statistic), "p": float(shapiro.pvalue)},
        "brown_forsythe": {
            "cell_factors": cell_factors,
            "groups": len(groups),
            "statistic": float(levene.statistic),
            "p": float(levene.pvalue),
        },
    }
    if not full_rank:
        reference["statsmodels_typ2_wald"] = [
            {"term": row["term"], "df": row["df"], "sum_sq": finite_or_none(row["sum_sq"])}
            for row in statsmodels_type2(full)
        ]
    return reference


def finite_or_none(value):
    return float(value) if np.isfinite(value) else None


def level_means(df, factors):
    out = {}
    for factor in factors:
        grouped = df.groupby(factor)[RESPONSE]
        out[factor] = [
            {"level": str(level), "mean": float(mean), "n": int(count)}
            for (level, mean), count in zip(grouped.mean().items(), grouped.count())
        ]
    return out


def interaction_means(df, pairs):
    out = []
    for first, second in pairs:
        grouped = df.groupby([first, second])[RESPONSE]
        out.append(
            {
                "factors": [first, second],
                "cells": [
                    {"levels": [str(a), str(b)], "mean": float(mean), "n": int(count)}
                    for ((a, b), mean), count in zip(grouped.mean().items(), grouped.count())
                ],
            }
        )
    return out


def recommendations(df, table, main, alpha):
    p_of = {row["term"]: row["p"] for row in table}
    out = {}
    for goal in ("maximize", "minimize"):
        picks = []
        for factor in main:
            p = p_of[factor]
            means = df.groupby(factor)[RESPONSE].mean()
            if p is None or p > alpha:
                choice = "SNS"
            else:
                choice = str(means.idxmax() if goal == "maximize" else means.idxmin())
            picks.append({"factor": factor, "choice": choice, "p": p})
        out[goal] = picks
    return out


def write_anova_fixture(stem, df, models, extras):
    """`models`: (name, main, interactions, log, cell_factors); `extras` adds means etc."""
    df.to_csv(OUT / f"{stem}.csv", index=False)
    factors = [column for column in df.columns if column != RESPONSE]
    fixture = {
        "csv": f"{stem}.csv",
        "factors": factors,
        "response": RESPONSE,
        "rows": len(df),
        "models": [model_reference(df, *model) for model in models],
    }
    fixture.update(extras(fixture))
    write_json(f"{stem}.json", fixture)


# ---------------------------------------------------------------------------------------------
# Fixtures


def two_factor_balanced():
    rng = np.random.default_rng(20240101)
    levels = {"A": ["1", "2", "4"], "B": ["8", "32", "128", "512"]}
    df = factorial(levels, 3, rng)
    df[RESPONSE] = positive_response(df, rng, {"A": 0.4, "B": 0.3}, {("A", "B"): 0.15}, 0.1)
    models = [
        ("additive", ["A", "B"], [], False, ["A", "B"]),
        ("interaction", ["A", "B"], [["A", "B"]], False, ["A", "B"]),
        ("interaction_log", ["A", "B"], [["A", "B"]], True, ["A", "B"]),
    ]

    def extras(fixture):
        table = fixture["models"][2]["table"]
        return {
            "level_means": level_means(df, ["A", "B"]),
            "interaction_means": interaction_means(df, [("A", "B")]),
            "recommend": {"model": "interaction_log", "alpha": ALPHA, **recommendations(df, table, ["A", "B"], ALPHA)},
        }

    write_anova_fixture("two_factor_balanced", df, models, extras)


# The models fitted on both three-factor data sets: (name, main effects, interactions, log
# response, factors whose cells the residual tests group by).
THREE_FACTOR_MODELS = [
    ("main", ["A", "B", "D"], [], False, ["A", "B", "D"]),
    ("two_way", ["A", "B", "D"], [["A", "B"], ["B", "D"]], False, ["A", "B", "D"]),
    ("two_way_log", ["A", "B", "D"], [["A", "B"], ["B", "D"]], True, ["A", "B", "D"]),
    (
        "full_order3_log",
        ["A", "B", "D"],
        [["A", "B"], ["A", "D"], ["B", "D"], ["A", "B", "D"]],
        True,
        ["A", "B", "D"],
    ),
]


def three_factor_unbalanced():
    rng = np.random.default_rng(20240202)
    levels = {"A": ["sync", "async"], "B": ["1", "2", "4"], "D": ["4k", "64k", "1m"]}
    df = factorial(levels, (2, 4), rng)
    df[RESPONSE] = positive_response(
        df, rng, {"A": 0.5, "B": 0.3, "D": 0.02}, {("A", "B"): 0.3, ("B", "D"): 0.01}, 0.15
    )
    models = THREE_FACTOR_MODELS

    def extras(fixture):
        table = fixture["models"][2]["table"]
        return {
            "level_means": level_means(df, ["A", "B", "D"]),
            "interaction_means": interaction_means(df, [("A", "B"), ("B", "D")]),
            "recommend": {"model": "two_way_log", "alpha": ALPHA, **recommendations(df, table, ["A", "B", "D"], ALPHA)},
        }

    write_anova_fixture("three_factor_unbalanced", df, models, extras)


def three_factor_missing_cells():
    rng = np.random.default_rng(20240303)
    levels = {"A": ["1", "2", "3"], "B": ["x", "y", "z"], "D": ["lo", "hi"]}
    missing = {("1", "x", "lo"), ("1", "x", "hi"), ("2", "z", "lo")}
    df = factorial(levels, (2, 3), rng, missing)
    df[RESPONSE] = positive_response(
        df, rng, {"A": 0.3, "B": 0.4, "D": 0.2}, {("A", "B"): 0.2, ("B", "D"): 0.05}, 0.12
    )
    models = THREE_FACTOR_MODELS

    def extras(fixture):
        return {"interaction_means": interaction_means(df, [("A", "B")])}

    write_anova_fixture("three_factor_missing_cells", df, models, extras)


def four_factor_balanced():
    rng = np.random.default_rng(20240404)
    levels = {"A": ["0", "1"], "B": ["1", "2", "4"], "D": ["ext4", "xfs"], "E": ["8", "32", "128"]}
    df = factorial(levels, 2, rng)
    df[RESPONSE] = positive_response(
        df,
        rng,
        {"A": 0.6, "B": 0.3, "D": 0.01, "E": 0.4},
        {("A", "E"): 0.25, ("B", "E"): 0.2, ("A", "B"): 0.01},
        0.1,
    )
    pairs = [list(pair) for pair in itertools.combinations(["A", "B", "D", "E"], 2)]
    models = [
        ("all_two_way_log", ["A", "B", "D", "E"], pairs, True, ["A", "B", "E"]),
        ("all_two_way", ["A", "B", "D", "E"], pairs, False, ["A", "B", "E"]),
        # Not hierarchical: the three-way term without its two-way margins.
        ("main_and_ABD_log", ["A", "B", "D", "E"], [["A", "B", "D"]], True, ["A", "B", "D"]),
    ]

    def extras(fixture):
        table = fixture["models"][0]["table"]
        return {
            "recommend": {"model": "all_two_way_log", "alpha": ALPHA, **recommendations(df, table, ["A", "B", "D", "E"], ALPHA)},
            "reduction": reduction(df, ["A", "B", "D", "E"], pairs, True),
        }

    write_anova_fixture("four_factor_balanced", df, models, extras)


def five_factor_paper():
    """Shaped like the IOAgent study: buffered mode O, disks D, agents A, buffer size S, buffers B."""
    rng = np.random.default_rng(20240505)
    levels = {
        "O": ["buffered", "unbuffered"],
        "D": ["1", "2", "4"],
        "A": ["1", "4", "16", "32"],
        "S": ["8", "32", "128"],
        "B": ["1", "4", "16", "32"],
    }
    df = factorial(levels, (1, 2), rng)
    df[RESPONSE] = positive_response(
        df,
        rng,
        {"O": 0.5, "D": 0.4, "A": 0.3, "S": 0.5, "B": 0.02},
        {("O", "S"): 0.3, ("A", "B"): 0.2, ("O", "D"): 0.15},
        0.2,
    )
    main = ["O", "D", "A", "S", "B"]
    paper_model = [
        ["O", "D"], ["O", "A"], ["O", "S"], ["O", "B"], ["D", "A"], ["A", "S"], ["A", "B"], ["S", "B"]
    ]
    models = [
        ("paper_model_log", main, paper_model, True, ["O", "D"]),
        ("main_raw", main, [], False, ["O", "S"]),
    ]

    def extras(fixture):
        table = fixture["models"][0]["table"]
        return {
            "level_means": level_means(df, main),
            "recommend": {"model": "paper_model_log", "alpha": ALPHA, **recommendations(df, table, main, ALPHA)},
            "reduction": reduction(df, main, paper_model, True),
        }

    write_anova_fixture("five_factor_paper", df, models, extras)


def reduction(df, main, interactions, log):
    data = df.assign(log_y=np.log(df[RESPONSE].astype(float))) if log else df
    response = "log_y" if log else RESPONSE
    kept, steps = reduce_interactions(data, response, main, interactions, ALPHA)
    return {
        "alpha": ALPHA,
        "log_response": log,
        "start": [list(term) for term in interactions],
        "kept": kept,
        "steps": steps,
    }


def samples():
    """Plain samples for summaries, correlation, Shapiro-Wilk and Brown-Forsythe."""
    rng = np.random.default_rng(20240606)

    summaries = []
    for values in (
        [1.0, 2.0],
        [10.0, 12.0, 9.5, 11.25, 10.75],
        list(np.round(rng.normal(-3.0, 0.5, 30), 6)),
        list(np.round(rng.lognormal(6.0, 0.3, 12), 6)),
    ):
        values = np.array(values, dtype=float)
        n = len(values)
        mean = values.mean()
        std = values.std(ddof=1)
        half = stats.t.ppf(0.975, n - 1) * std / np.sqrt(n)
        summaries.append(
            {
                "values": values.tolist(),
                "n": n,
                "mean": float(mean),
                "std_dev": float(std),
                "ci95_low": float(mean - half),
                "ci95_high": float(mean + half),
                "cv": float(std / mean),
            }
        )

    correlations = []
    for n, slope, noise in ((3, 1.0, 0.5), (8, -2.0, 1.0), (25, 0.3, 1.0), (60, -0.05, 1.0), (200, 1.0, 0.01)):
        x = np.round(rng.uniform(0, 10, n), 6)
        y = np.round(slope * x + rng.normal(0, noise * max(1.0, abs(slope)), n), 6)
        result = stats.pearsonr(x, y)
        correlations.append(
            {"x": x.tolist(), "y": y.tolist(), "r": float(result.statistic), "p": float(result.pvalue)}
        )

    normality = []
    generators = {
        "normal": lambda n: rng.normal(3.0, 2.0, n),
        "uniform": lambda n: rng.uniform(0, 1, n),
        "exponential": lambda n: rng.exponential(1.0, n),
        "student_t3": lambda n: rng.standard_t(3, n),
    }
    plan = [
        ("normal", 3), ("exponential", 3), ("uniform", 4), ("exponential", 5), ("normal", 6),
        ("uniform", 7), ("exponential", 9), ("normal", 11), ("normal", 12), ("student_t3", 20),
        ("uniform", 35), ("exponential", 50), ("normal", 137), ("student_t3", 400),
        ("normal", 1500), ("exponential", 1500),
    ]
    for kind, n in plan:
        values = np.round(generators[kind](n), 6)
        result = stats.shapiro(values)
        normality.append(
            {"kind": kind, "values": values.tolist(), "statistic": float(result.statistic), "p": float(result.pvalue)}
        )
    # Ties and an unsorted input whose middle element is not the median.
    tied = [5.0, 1.0, 3.0, 3.0, 3.0, 2.0, 9.0, 3.0, 4.0, 4.0]
    result = stats.shapiro(tied)
    normality.append({"kind": "ties", "values": tied, "statistic": float(result.statistic), "p": float(result.pvalue)})

    equal_variance = []
    for sizes, scales in (([5, 5, 5], [1, 1, 1]), ([4, 9, 6, 12], [1, 2, 1, 3]), ([2, 3], [1, 1]), ([30, 40, 25], [1, 1.2, 0.9])):
        groups = [np.round(rng.normal(10 * i, scale, size), 6) for i, (size, scale) in enumerate(zip(sizes, scales))]
        result = stats.levene(*groups, center="median")
        equal_variance.append(
            {"groups": [g.tolist() for g in groups], "statistic": float(result.statistic), "p": float(result.pvalue)}
        )

    write_json(
        "samples.json",
        {
            "summaries": summaries,
            "correlations": correlations,
            "shapiro_wilk": normality,
            "brown_forsythe": equal_variance,
        },
    )


def write_json(name, value):
    with open(OUT / name, "w") as out:
        # allow_nan=False: NaN is not JSON, and the Rust side must be able to read every file.
        json.dump(value, out, indent=1, allow_nan=False)
        out.write("\n")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    two_factor_balanced()
    three_factor_unbalanced()
    three_factor_missing_cells()
    four_factor_balanced()
    five_factor_paper()
    samples()
    total = sum(path.stat().st_size for path in OUT.iterdir())
    print(f"wrote {len(list(OUT.iterdir()))} files, {total / 1024:.0f} KiB, to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
