"""The whole graph's verdict: the graph rebuilt around dice's kernels
against Inductor's code for the same graph.

Each kernel was accepted against its own partition as Inductor compiles it,
but the rebuilt graph can still lose: Inductor fuses across the partition
boundaries that the kernels now cut, and every kernel is one more call. So
before the backend hands back a graph with dice kernels, it times both
graphs on the graph's example inputs, taking turns run by run, and keeps
dice's only where its median is the lower: never slower than Inductor alone,
as measured on the device that will run the graph.
"""

import statistics

from dice.bench.timing import time_forwards

RUNS = 30


def graph_times(dice_graph, inductor_graph, example_inputs, device, runs=RUNS):
    """(dice_ms, inductor_ms): the median milliseconds of one call of each."""
    dice_times, inductor_times = time_forwards([dice_graph, inductor_graph], example_inputs,
                                               runs, device)
    return statistics.median(dice_times), statistics.median(inductor_times)
