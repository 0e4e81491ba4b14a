"""speedups.png: per granularity, the correct tasks' speedups over eager
and over Inductor, tasks sorted by their speedup over eager, on a log
scale with the 1.0x line (the baseline's speed). Each task's noise (run.py)
is a shaded bar around 1.0x: a speedup over Inductor below it is a task
slower than Inductor, whose name is then printed in red."""

from dice.errors import DiceError


def speedup_plot(run, path):
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no display on a benchmark machine
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise DiceError("speedups.png needs matplotlib (python/requirements.txt)") from None

    granularities = list(run.summary)
    fig, axes = plt.subplots(len(granularities), 1, squeeze=False,
                             figsize=(10, 3.2 * len(granularities)))
    for ax, g in zip(axes[:, 0], granularities):
        timed = sorted((r for r in run.results if r.granularity == g and r.correct
                        and r.speedup_vs_eager is not None),
                       key=lambda r: r.speedup_vs_eager)
        s = run.summary[g]
        ax.set_title(f"granularity {g}: {s['correct']} of {s['tasks']} correct; geomean "
                     f"{s['geomean_speedup']['eager']:.2f}x vs eager, "
                     f"{s['geomean_speedup']['inductor']:.2f}x vs Inductor", fontsize=9)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_yscale("log")
        as_ratio = FuncFormatter(lambda v, _: f"{v:g}x")
        ax.yaxis.set_major_formatter(as_ratio)
        ax.set_ylabel("speedup (x)")
        if not timed:
            ax.text(0.5, 0.5, "no correct, timed task", transform=ax.transAxes, ha="center")
            continue
        xs = range(len(timed))
        width = 0.4
        for offset, baseline in ((-width / 2, "eager"), (width / 2, "inductor")):
            values = [getattr(r, f"speedup_vs_{baseline}") or float("nan") for r in timed]
            # From the 1.0x line: up is faster than the baseline, down slower.
            ax.bar([x + offset for x in xs], [v - 1 for v in values], width, bottom=1.0,
                   label=f"vs {'Inductor' if baseline == 'inductor' else baseline}")
        shown = [getattr(r, f"speedup_vs_{b}") for r in timed for b in ("eager", "inductor")]
        shown = [v for v in shown if v] + [1 + (r.noise or 0) for r in timed] \
            + [1 / (1 + (r.noise or 0)) for r in timed]
        low, high = min(shown) / 1.25, max(shown) * 1.25
        ax.set_ylim(low, high)
        # Within a decade every minor tick is labelled; over several, 2x and 5x.
        narrow = high / low < 10
        ax.yaxis.set_minor_formatter(FuncFormatter(
            lambda v, _: f"{v:.2g}x" if narrow or f"{v:g}"[0] in "25" else ""))
        noisy = [(x, r.noise) for x, r in zip(xs, timed) if r.noise is not None]
        if noisy:
            ax.errorbar([x + width / 2 for x, _ in noisy], [1.0] * len(noisy),
                        yerr=[[1 - 1 / (1 + n) for _, n in noisy], [n for _, n in noisy]],
                        fmt="none", ecolor="black", elinewidth=6, alpha=0.35,
                        label="noise (Inductor against itself)")
        ax.set_xticks(list(xs))
        labels = ax.set_xticklabels([r.task for r in timed], rotation=60, ha="right",
                                    fontsize=6 if len(timed) > 20 else 8)
        for label, r in zip(labels, timed):
            if r.slower_than_inductor:
                label.set_color("red")
        ax.legend(fontsize=8, loc="upper left")  # tasks are sorted, the tallest bars right
    env = run.environment
    cpu = "" if env["device"].startswith("cuda") else " (CPU times)"
    fig.suptitle(f"dice bench tasks on {env['hardware']}{cpu}: speedup of the dice "
                 "backend over eager and over Inductor", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
