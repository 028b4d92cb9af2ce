"""A/B of mnemo builds in ../shared/bench/sbs.py's pattern: each mnemo query is followed by Weaviate's rankedFusion and
relativeScoreFusion queries for the same question, so that every server is as idle and its caches as cold as in
sbs.py. The variants take turns question by question (the order alternating), on the same database.

usage: python3 scripts/sbsab/sbsab.py WORK_DIR N ROUNDS NAME=BIN[:VAR=VALUE,...] ...
  WORK_DIR is sbs.py's (it holds sbs-N.db, queries.jsonl; Weaviate runs on 127.0.0.1:8097 with class MemN, as sbs.py
  left it). A variant's MNEMO_DB=... points it at another copy of the database (a build with a newer schema migrates
  the file it opens). Prints p50/p95 ms per variant, and Weaviate's rankedFusion, unscoped and in one session.
"""
import http.client, json, os, socket, subprocess, sys, time
W, N, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
variants = sys.argv[4:]
db = os.path.join(W, 'sbs-%d.db' % N)
qs = [json.loads(l)['text'] for l in open(os.path.join(W, 'queries.jsonl'))]
scopes = [(j * 37) % 100 for j in range(len(qs))]
# The query vectors Weaviate is given, from the first variant's built-in embedder (as sbs.py does).
out = subprocess.run([variants[0].split('=', 1)[1].split(':')[0], 'embed', '--json'], input='\n'.join(q.replace('\n', ' ') for q in qs),
                     capture_output=True, text=True, check=True, env=dict(os.environ, MNEMO_DB=db)).stdout
qv = json.loads(out)['vectors']
vs = lambda v: '[' + ','.join('%.6f' % x for x in v) + ']'
CLS = 'Mem%d' % N
srvs = []
for spec in variants:
    name, rest = spec.split('=', 1)
    binp, _, envs = rest.partition(':')
    env = dict(os.environ, MNEMO_DB=db)
    for kv in filter(None, envs.split(',')):
        k, v = kv.split('=', 1); env[k] = v
    s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()
    p = subprocess.Popen([binp, 'serve', '--addr', '127.0.0.1:%d' % port, '--profile', 'p'], env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(W, 'sbsab-%s.log' % name), 'w'))
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    for _ in range(300):
        try:
            c.request('GET', '/healthz'); c.getresponse().read(); break
        except Exception:
            c.close(); c = http.client.HTTPConnection('127.0.0.1', port, timeout=60); time.sleep(0.1)
    srvs.append((name, p, c))
wv = http.client.HTTPConnection('127.0.0.1', 8097, timeout=60)
def wq(j, scoped, fusion):
    a = 'hybrid:{query:%s, alpha:0.5, vector:%s, fusionType:%s, properties:["text"]}' % (json.dumps(qs[j]), vs(qv[j]), fusion)
    if scoped: a += ', where:{path:["scope"], operator:Equal, valueInt:%d}' % scopes[j]
    body = json.dumps({'query': '{Get{%s(%s, limit:10){mid}}}' % (CLS, a)})
    t = time.perf_counter()
    wv.request('POST', '/v1/graphql', body=body, headers={'Content-Type': 'application/json'})
    r = wv.getresponse(); d = r.read(); assert r.status == 200
    return (time.perf_counter() - t) * 1000
def q(c, j, scoped):
    b = {'query': qs[j], 'limit': 10}
    if scoped: b['sessions'] = [str(scopes[j])]
    t = time.perf_counter()
    c.request('POST', '/v1/recall', body=json.dumps(b), headers={'Content-Type': 'application/json'})
    r = c.getresponse(); d = r.read()
    assert r.status == 200, d
    return (time.perf_counter() - t) * 1000
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))]
for scoped in (False, True):
    lat = {n: [] for n, _, _ in srvs}; lat['wv_ranked'] = []
    for rnd in range(reps + 1):
        for j in range(len(qs)):
            for n, _, c in (srvs if (j + rnd) % 2 == 0 else srvs[::-1]):
                ms = q(c, j, scoped)
                w = wq(j, scoped, 'rankedFusion'); wq(j, scoped, 'relativeScoreFusion')
                if rnd: lat[n].append(ms); lat['wv_ranked'].append(w)
    print('N=%d %-9s' % (N, 'scoped' if scoped else 'unscoped'), '  '.join('%s %.3f/%.3f' % (n, pct(v, .5), pct(v, .95)) for n, v in lat.items()))
    sys.stdout.flush()
for _, p, _ in srvs: p.terminate(); p.wait()
