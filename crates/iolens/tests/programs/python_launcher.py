import subprocess, time
def slurp():
    with open('data.bin', 'rb', buffering=0) as f:
        while f.read(1000): pass
slurp()
subprocess.run(['dd', 'if=/dev/zero', 'of=o.bin', 'bs=4k', 'count=10'], stderr=subprocess.DEVNULL)
time.sleep(0.2)
slurp()
