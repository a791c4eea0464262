import os, subprocess, threading
def work(n):
    fd = os.open('w%d.bin' % n, os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(2000): os.write(fd, b'x')
    os.close(fd)
done = threading.Event()
def spawn():
    while not done.is_set(): subprocess.run(['true'])
s = threading.Thread(target=spawn)
s.start()
ts = [threading.Thread(target=work, args=(n,)) for n in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
done.set()
s.join()
