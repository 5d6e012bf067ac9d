#!/usr/bin/python3
"""Writes small files in the research pipeline's formats, from its documented
formats (NavneelSinghal/Adaptive-Sampling-Networks: README, the dataset
sources YAML, generate_candidates_multi's records), into the working
directory:

  sources.yaml          datasets: [{name, path, prompt_key, incidence_vector}],
                        paths relative to the working directory, as there
  data/stories.jsonl    prompts of a creative dataset (check_diversity)
  data/math.jsonl       GSM8K-style prompts: dataset, ground_truth
  heuristics.yaml       sampling_pipelines: [{name, weight, processors}],
                        names as its current generator writes them
  generations.jsonl     its generation records, two runs (seeds 0 and 1)
                        concatenated, each written pipeline by pipeline as
                        its generator orders the tasks: a prompt's records
                        are not contiguous
"""
import json
import os

SYSTEM = "You are a helpful assistant."
INCIDENCE = {
    "stories": {"check_factual": False, "check_ifeval_or_math_or_gsm8k": False, "check_diversity": True},
    "math": {"check_factual": False, "check_ifeval_or_math_or_gsm8k": True, "check_diversity": False},
}
PROMPTS = {
    "stories": [{"prompt": "Write a short story about a lighthouse keeper."},
                {"prompt": "Describe a city at night in three sentences.", "source_id": "s-2"}],
    "math": [{"prompt": "Tom has 3 apples and buys 4 more. How many apples does he have?",
              "dataset": "gsm8k", "ground_truth": "7"}],
}
PIPELINES = [
    {"name": "temp_0.7", "weight": 1.0,
     "processors": [{"name": "temperature", "params": {"temperature": 0.7}}]},
    {"name": "min_p_0.05_temp_1.0", "weight": 1.0,
     "processors": [{"name": "temperature", "params": {"temperature": 1.0}},
                    {"name": "min_p", "params": {"min_p": 0.05}}]},
    {"name": "top_k_16_temp_1.2", "weight": 1.0,
     "processors": [{"name": "temperature", "params": {"temperature": 1.2}},
                    {"name": "top_k", "params": {"top_k": 16}}]},
]
# texts a model might have written: for the gsm8k prompt some right, some wrong
TEXTS = {
    "stories": ["The keeper climbed the stairs as the storm rolled in, lamp in hand.",
                "Every night the light swept the sea, and every night she counted ships.",
                "Old Anders had not spoken to anyone in a year; the gulls did not mind.",
                "Neon hums over wet streets. Taxis hiss past. Somewhere a saxophone plays.",
                "The city breathes in amber light; windows blink like tired eyes.",
                "At midnight the towers glow, the river holds their reflections, and no one sleeps."],
    "math": ["He has 3 + 4 = 7 apples. #### 7", "Tom has 7 apples.", "3 plus 4 is 8, so 8 apples.",
             "The answer is 7.", "He now has 6 apples.", "7"],
}


def main():
    os.makedirs("data", exist_ok=True)
    with open("sources.yaml", "w") as f:
        f.write("datasets:\n")
        for name in ("stories", "math"):
            f.write('  - name: "%s"\n    path: "data/%s.jsonl"\n    prompt_key: "prompt"\n    incidence_vector:\n'
                    % (name, name))
            for k, v in INCIDENCE[name].items():
                f.write("      %s: %s\n" % (k, "true" if v else "false"))
    for name, recs in PROMPTS.items():
        with open("data/%s.jsonl" % name, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    with open("heuristics.yaml", "w") as f:
        f.write("sampling_pipelines:\n")
        for p in PIPELINES:
            f.write("- name: %s\n  weight: %r\n  processors:\n" % (p["name"], p["weight"]))
            for proc in p["processors"]:
                (k, v), = proc["params"].items()
                f.write("  - name: %s\n    params:\n      %s: %r\n" % (proc["name"], k, v))
    tasks = [(name, r) for name in ("stories", "math") for r in PROMPTS[name]]
    with open("generations.jsonl", "w") as f:
        for seed in (0, 1):
            for pi, p in enumerate(PIPELINES):
                for ti, (name, src) in enumerate(tasks):
                    texts = TEXTS[name]
                    rec = dict(src)
                    rec.update({"system_prompt": SYSTEM,
                                "sampler_info": {"name": p["name"], "config": p["processors"]},
                                "generation": texts[(3 * seed + pi + ti) % len(texts)],
                                "seed": seed,
                                "incidence_vector": INCIDENCE[name]})
                    f.write(json.dumps(rec) + "\n")


main()
