#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks a /metrics document of ringcast-readout (test_metrics.sh).

  metrics_compare.py lint METRICS            format rules: one family per name, HELP/TYPE once
                                             before its samples, no duplicate series
  metrics_compare.py monotonic EARLY LATE    every counter series of EARLY is <= in LATE
  metrics_compare.py compare METRICS JSON    every family's "(json: ...)" figure equals the
                                             --stats-json value, series by series, and every
                                             counter of the JSON is shown by some family
Prints one line per problem and exits 1 if there is any.
"""
import json
import math
import re
import sys

problems = []
stats = {'compared': 0}


def problem(msg):
    problems.append(msg)


def parse_labels(text):
    labels, i = {}, 0
    while i < len(text):
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="', text[i:])
        if not m:
            raise ValueError("bad labels: " + text)
        name, i = m.group(1), i + m.end()
        value = []
        while text[i] != '"':
            if text[i] == '\\':
                value.append({'\\': '\\', '"': '"', 'n': '\n'}[text[i + 1]])
                i += 2
            else:
                value.append(text[i])
                i += 1
        labels[name] = ''.join(value)
        i += 1
        if i < len(text) and text[i] == ',':
            i += 1
    return labels


def parse(path):
    """families: name -> {help, type, samples: [(labels, value)]}, in document order."""
    fams, order, current = {}, [], None
    for line in open(path, encoding='utf-8'):
        line = line.rstrip('\n')
        if not line:
            continue
        if line.startswith('# HELP '):
            name, _, text = line[7:].partition(' ')
            if name in fams:
                problem(f"{name}: a second HELP (family split or repeated)")
            fams[name] = {'help': text.replace('\\n', '\n').replace('\\\\', '\\'), 'type': None, 'samples': []}
            order.append(name)
            current = name
        elif line.startswith('# TYPE '):
            name, _, typ = line[7:].partition(' ')
            if name != current or fams[name]['type'] is not None:
                problem(f"{name}: TYPE not right after its HELP")
            else:
                fams[name]['type'] = typ
        elif line.startswith('#'):
            continue
        else:
            m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
            if not m:
                problem(f"unparsable sample line: {line}")
                continue
            name, labels, value = m.group(1), parse_labels(m.group(3) or ''), m.group(4)
            if name != current:
                problem(f"{name}: sample outside its family's block")
                continue
            key = tuple(sorted(labels.items()))
            if any(tuple(sorted(l.items())) == key for l, _ in fams[name]['samples']):
                problem(f"{name}{labels}: duplicate series")
            fams[name]['samples'].append((labels, float(value) if value not in ('NaN', '+Inf', '-Inf') else float(value.replace('Inf', 'inf'))))
    return fams, order


def lint(path):
    fams, _ = parse(path)
    for name, f in fams.items():
        if f['type'] is None:
            problem(f"{name}: no TYPE")
        if not f['samples']:
            problem(f"{name}: HELP/TYPE without samples")
        if f['type'] == 'counter' and not name.endswith('_total'):
            problem(f"{name}: counter without _total")
        if name != 'process_start_time_seconds' and not name.startswith('ringcast_'):
            problem(f"{name}: not in the ringcast_ namespace")
    if not fams:
        problem("no family at all")


def monotonic(early, late):
    a, _ = parse(early)
    b, _ = parse(late)
    for name, f in a.items():
        if f['type'] != 'counter':
            continue
        later = {tuple(sorted(l.items())): v for l, v in b.get(name, {'samples': []})['samples']}
        for labels, v in f['samples']:
            key = tuple(sorted(labels.items()))
            if key not in later:
                problem(f"{name}{labels}: gone in the later scrape")
            elif later[key] < v:
                problem(f"{name}{labels}: counter went down, {v} -> {later[key]}")


def tags_of(help_text):
    m = re.search(r'\(json: ([^)]*)\)$', help_text)
    return [t.strip() for t in m.group(1).split(';')] if m else []


def to_number(v):
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    return float(v)


def equal(metric, name, key, value):
    if key.endswith('_ns') and '_seconds' in name:
        return math.isclose(metric, value / 1e9, rel_tol=1e-9, abs_tol=1e-9)
    if key.endswith('_ms') and '_seconds' in name:
        return math.floor(metric * 1e3 + 1e-6) == value
    if key == 'seconds':
        return abs(metric - value) <= 0.0015   # the JSON rounds to ms
    return metric == value


def find(objs, **want):
    for o in objs:
        if all(str(o.get(k)) == v for k, v in want.items()):
            return o
    return None


def compare(mpath, jpath):
    fams, _ = parse(mpath)
    js = json.load(open(jpath))
    covered = set()          # (where, key) pairs shown by some family
    sums = {}                # top-level key -> sum of its series
    for name, f in fams.items():
        for tag in tags_of(f['help']):
            if tag.startswith('sum '):
                for labels, v in f['samples']:   # a {label} in the key: one sum per label value
                    key = re.sub(r'\{(\w+)\}', lambda m: labels[m.group(1)], tag[4:])
                    sums[key] = sums.get(key, 0.0) + v
                    covered.add(('top', key))
                continue
            where, _, key = tag.rpartition('.') if '[]' in tag else ('top', '', tag)
            for labels, v in f['samples']:
                k = re.sub(r'\{(\w+)\}', lambda m: labels[m.group(1)], key)
                if where == 'cards[]':
                    obj = find(js['cards'], card=labels['card'])
                elif where == 'cards[].elinks_lost[]':
                    card = find(js['cards'], card=labels['card'])
                    obj = find(card['elinks_lost'], elink=labels['elink']) if card else None
                    if card and obj is None:   # only e-links with a loss or error are listed
                        if v != 0:
                            problem(f"{name}{labels} = {v} but e-link {labels['elink']} is not in elinks_lost")
                        covered.add((where, k))
                        continue
                elif where == 'cards[].elinks[]':
                    card = find(js['cards'], card=labels['card'])
                    obj = find(card['elinks'], elink=labels['elink']) if card else None
                elif where == 'publishers[]':
                    obj = find(js['publishers'], thread=labels['thread'], port=labels['port'])
                elif where == 'publishers[].publisher':
                    p = find(js['publishers'], thread=labels['thread'], port=labels['port'])
                    obj = p['publisher'] if p else None
                elif where == 'subscribers[]':
                    obj = find(js['subscribers'], publisher_thread=labels['thread'], peer=labels['peer'])
                    if obj is not None and obj['address'] != labels['address']:
                        problem(f"{name}{labels}: address differs from the JSON's {obj['address']}")
                elif where == 'top':
                    obj = js
                else:
                    problem(f"{name}: unknown json place {tag}")
                    break
                if obj is None:
                    problem(f"{name}{labels}: no such object in the JSON ({where})")
                    continue
                covered.add((where, k))
                stats['compared'] += 1
                if k not in obj:
                    problem(f"{name}{labels}: the JSON has no {where}.{k}")
                elif isinstance(obj[k], str):
                    if labels.get(k) != obj[k]:
                        problem(f"{name}{labels}: label {k} differs from the JSON's '{obj[k]}'")
                elif not equal(v, name, k, to_number(obj[k])):
                    problem(f"{name}{labels} = {v}, JSON {where}.{k} = {obj[k]}")
    for key, total in sums.items():
        obj, k = (js['publisher'], key[10:]) if key.startswith('publisher.') else (js, key)
        if k not in obj:
            problem(f"sum {key}: not in the JSON")
        elif total != to_number(obj[k]):
            problem(f"sum {key}: metrics add up to {total}, JSON says {obj[k]}")
    # Every figure of the JSON is shown somewhere.
    ids = {'card', 'thread', 'port', 'elink', 'peer', 'publisher_thread', 'address'}
    # Sums of figures shown by kind or cause.
    derived = {('cards[].elinks_lost[]', 'chunks_lost'), ('cards[].elinks[]', 'chunks_lost'),
               ('cards[].elinks[]', 'errors')}
    def need(where, obj):
        for k, v in obj.items():
            if k in ids or isinstance(v, (list, dict)) or (where, k) in derived:
                continue
            if (where, k) not in covered:
                problem(f"JSON {where}.{k} is shown by no metric")
    need('top', {k: v for k, v in js.items()})
    need('top', {'publisher.' + k: v for k, v in js['publisher'].items()})
    for c in js['cards']:
        need('cards[]', c)
        for e in c['elinks_lost']:
            need('cards[].elinks_lost[]', e)
        for e in c['elinks']:
            need('cards[].elinks[]', e)
    for p in js['publishers']:
        need('publishers[]', p)
        need('publishers[].publisher', p['publisher'])
    for s in js['subscribers']:
        need('subscribers[]', s)
        if not find(fams.get('ringcast_subscriber_info', {'samples': []})['samples'] and
                    [l for l, _ in fams['ringcast_subscriber_info']['samples']],
                    thread=str(s['publisher_thread']), peer=str(s['peer'])):
            problem(f"subscriber {s['address']} (thread {s['publisher_thread']}, peer {s['peer']}) has no metrics")


def main():
    cmd = sys.argv[1]
    if cmd == 'lint':
        lint(sys.argv[2])
    elif cmd == 'monotonic':
        monotonic(sys.argv[2], sys.argv[3])
    elif cmd == 'compare':
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {cmd}")
    for p in problems:
        print(p)
    if cmd == 'compare':
        print(f"{stats['compared']} series compared with the JSON, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
