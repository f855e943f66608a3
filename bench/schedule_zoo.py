#!/usr/bin/env python3
# The confidence schedule on the zoo pair (zoo/README.md), greedy, from the repository root:
#   python3 bench/schedule_zoo.py [--prompts 16] [--reps 5] [--threads 1] [--work DIR]
# 1. fulgur calibrate: step-time table + the DSpark head's temperatures from two held-out stdlib
#    files (imaplib.py, gzip.py; held out of the zoo's training by its sha1 rule);
# 2. acceptance of the draft with the trained block vs llama.cpp's n_max-row block, n_max 1..7;
# 3. tokens/s of plain, fixed n_max 3 and 7, adaptive, confidence, every configuration run once
#    per (repetition, prompt), interleaved, prompts from two other held-out files (difflib, enum);
# 4. fulgur bench --spec-synth-rates with the per-position acceptance calibrate measured, the
#    three schedules side by side, without and with synthetic confidences;
# 5. with --standin FILE (made by `fulgur standin -m zoo/code-q8_0.gguf --size 0.6b -o FILE`): the same
#    rates on a memory-bound target where drafting pays, fixed n_max 1..7 swept against adaptive and
#    confidence (the default schedule must reach 95 % of the best fixed length).
# --skip-blocks leaves out step 2 (it does not depend on the schedule).
# Prints what bench/RESULTS.md quotes.
import argparse, json, os, statistics, subprocess

ap = argparse.ArgumentParser()
ap.add_argument('--prompts', type=int, default=16)
ap.add_argument('--reps', type=int, default=5)
ap.add_argument('--threads', type=int, default=1)
ap.add_argument('--work', default='/tmp/fulgur_schedule_zoo')
ap.add_argument('--skip-blocks', action='store_true')
ap.add_argument('--standin', default='')
ap.add_argument('--standin-reps', type=int, default=3)
ap.add_argument('--standin-gen', type=int, default=128)
a = ap.parse_args()
F, T, D = 'build/fulgur', 'zoo/code-q8_0.gguf', 'zoo/code-dspark-q8_0.gguf'
lib = '/usr/lib/python3.11/'
os.makedirs(a.work, exist_ok=True)
cal_text, cal = f'{a.work}/calib.txt', f'{a.work}/zoo.calibration.json'
open(cal_text, 'w').write(open(lib + 'imaplib.py').read() + open(lib + 'gzip.py').read())
text = open(lib + 'difflib.py').read() + open(lib + 'enum.py').read()
prompts = []
for i in range(a.prompts):
    at = (len(text) - 600) * i // max(1, a.prompts - 1)
    p = f'{a.work}/p{i}.txt'
    open(p, 'w').write(text[at:at + 400])
    prompts.append(p)
thr = ['-t', str(a.threads)]

def run(args):
    r = subprocess.run([F] + args, capture_output=True, text=True)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout

print('## calibrate\n```')
out = run(['calibrate', '-m', T, '-md', D, '-f', cal_text, '-o', cal, '--prompts', '64'] + thr)
print(out + '```')
rates = out.split('(bench --spec-synth-rates): ')[1].split()[0]

if not a.skip_blocks:
  print('\n## trained block vs llama.cpp block (acceptance, greedy, fixed n_max)\n')
  print('| n_max | block | drafted | accepted | acceptance | tokens / target step |\n| ---: | --- | ---: | ---: | ---: | ---: |')
  for n in range(1, 8):
      for blk in ['trained', 'n-max']:
          if n == 7 and blk == 'n-max':
              continue  # the same block
          dr = ac = steps = toks = 0
          for p in prompts:
              j = json.loads(run(['run', '-m', T, '-md', D, '-f', p, '-n', '64', '--temp', '0', '--json', '--ignore-eos',
                                  '--spec-n-max', str(n), '--spec-schedule', 'fixed', '--spec-dflash-block', blk] + thr))
              dr += j['spec']['drafted']; ac += j['spec']['accepted']
              steps += j['spec']['target_decodes']; toks += len(j['tokens'])
          print(f'| {n} | {blk} | {dr} | {ac} | {ac / dr:.3f} | {toks / steps:.3f} |', flush=True)

print('\n## zoo pair tokens/s\n')
configs = {
    'plain': [],
    'fixed, n_max 3 (llama.cpp default)': ['-md', D, '--spec-n-max', '3', '--spec-schedule', 'fixed'],
    'fixed, n_max 7 (the block)': ['-md', D, '--spec-n-max', '7', '--spec-schedule', 'fixed'],
    'adaptive, costs on the fly': ['-md', D, '--spec-n-max', '7', '--spec-schedule', 'adaptive'],
    'adaptive, calibrated table': ['-md', D, '--spec-n-max', '7', '--spec-schedule', 'adaptive', '--spec-calibration', cal],
    'confidence, on the fly, raw head': ['-md', D, '--spec-n-max', '7', '--spec-schedule', 'confidence'],
    'confidence, table + temperatures': ['-md', D, '--spec-n-max', '7', '--spec-schedule', 'confidence', '--spec-calibration', cal],
}
tps = {c: [] for c in configs}
st = {c: [0, 0, 0, 0] for c in configs}
for rep in range(a.reps):
    n_tok = {c: 0 for c in configs}; sec = {c: 0.0 for c in configs}
    for p in prompts:
        for c, extra in configs.items():
            j = json.loads(run(['run', '-m', T, '-f', p, '-n', '128', '--temp', '0', '--json', '--ignore-eos'] + thr + extra))
            n_tok[c] += len(j['tokens']); sec[c] += j['timings']['decode_s']
            if rep == 0:
                s = j.get('spec', {})
                st[c][0] += s.get('drafted', 0); st[c][1] += s.get('accepted', 0)
                st[c][2] += s.get('target_decodes', len(j['tokens'])); st[c][3] += len(j['tokens'])
    for c in configs:
        tps[c].append(n_tok[c] / sec[c])
print('| schedule | tok/s (median) | min | max | vs plain (median of paired ratios) | drafted | accepted | tokens / target step |')
print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
for c in configs:
    ratio = statistics.median(x / y for x, y in zip(tps[c], tps['plain']))
    print(f'| {c} | {statistics.median(tps[c]):.1f} | {min(tps[c]):.1f} | {max(tps[c]):.1f} | {ratio:.2f}x | '
          f'{st[c][0]} | {st[c][1]} | {st[c][3] / st[c][2]:.2f} |')

print(f'\n## bench --spec-synth-rates {rates}\n```')
for kappa in ['0', '8']:
    print(run(['bench', '-m', T, '-p', '64', '-n', '256', '-r', '7', '--spec-synth-rates', rates, '--spec-n-max', '7',
               '--spec-schedule', 'fixed,adaptive,confidence', '--spec-synth-confidence', kappa,
               '--spec-calibration', cal] + thr), end='')
print('```')

if a.standin:
    print(f'\n## stand-in {a.standin}, bench --spec-synth-rates {rates}\n')
    print('| schedule | n_max | tok/s | plain tok/s | vs plain | mean accepted length |\n| --- | ---: | ---: | ---: | ---: | ---: |')
    def bench(n_max, schedules):
        # A rate list's length is the replay drafter's longest draft: fixed n_max drafts its first n_max.
        cut = ','.join(rates.split(',')[:n_max])
        j = json.loads(run(['bench', '-m', a.standin, '-p', '32', '-n', str(a.standin_gen), '-r', str(a.standin_reps), '--verify', '0',
                            '--spec-synth-rates', cut, '--spec-schedule', schedules,
                            '--json'] + thr))
        return j
    for n in range(1, 8):
        j = bench(n, 'fixed')
        e = j['spec'][0]
        print(f"| fixed | {n} | {e['tok_s']:.1f} | {j['plain_tok_s']:.1f} | {e['speedup']:.2f}x | {e['mean_accepted_length']:.2f} |", flush=True)
    j = bench(7, 'adaptive,confidence')
    for e in j['spec']:
        print(f"| {e['schedule']} | 7 | {e['tok_s']:.1f} | {j['plain_tok_s']:.1f} | {e['speedup']:.2f}x | {e['mean_accepted_length']:.2f} |", flush=True)
