import os
with open('data.bin','rb') as f:
    while f.read(10000): pass
fd = os.open('data.bin', os.O_RDONLY)
for i in range(100): os.pread(fd, 4096, i * 8192)
os.close(fd)
with open('out.txt','w') as f:
    for i in range(1000): f.write('line %d\n' % i)
