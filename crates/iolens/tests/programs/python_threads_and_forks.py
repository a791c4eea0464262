import os, threading
def work(n):
    with open('t%d.bin' % n, 'wb') as f:
        for i in range(50): f.write(os.urandom(4096)); f.flush()
ts = [threading.Thread(target=work, args=(n,)) for n in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
pid = os.fork()
if pid == 0:
    with open('child.bin', 'wb') as f: f.write(b'x' * 100000)
    os._exit(0)
os.waitpid(pid, 0)
