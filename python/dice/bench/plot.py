"""speedups.png: per granularity, the correct tasks' speedups over eager
and over Inductor, tasks sorted by their speedup over eager, on a log
scale with the 1.0x line (the baseline's speed)."""

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
        ax.yaxis.set_minor_formatter(as_ratio)
        ax.set_ylabel("speedup (x)")
        if not timed:
            ax.text(0.5, 0.5, "no correct, timed task", transform=ax.transAxes, ha="center")
            continue
        xs = range(len(timed))
        width = 0.4
        for offset, baseline in ((-width / 2, "eager"), (width / 2, "inductor")):
            values = [getattr(r, f"speedup_vs_{baseline}") or float("nan") for r in timed]
            ax.bar([x + offset for x in xs], values, width,
                   label=f"vs {'Inductor' if baseline == 'inductor' else baseline}")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r.task for r in timed], rotation=60, ha="right",
                           fontsize=6 if len(timed) > 20 else 8)
        ax.legend(fontsize=8)
    env = run.environment
    cpu = "" if env["device"].startswith("cuda") else " (CPU times)"
    fig.suptitle(f"dice bench tasks on {env['hardware']}{cpu}: speedup of the dice "
                 "backend over eager and over Inductor", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
