# paced_writer.py DIR SECONDS: appends to 50 files in DIR with pauses of 1-50 ms, an fsync
# every tenth write, for SECONDS: a workload whose timing, not its volume, is the point.
import os, random, sys, time
out, secs = sys.argv[1], float(sys.argv[2])
random.seed(1)
end = time.monotonic() + secs
i = 0
while time.monotonic() < end:
    with open(os.path.join(out, f"f{i % 50}"), "ab") as f:
        f.write(b"x" * random.choice([512, 4096, 65536]))
        if i % 10 == 0:
            os.fsync(f.fileno())
    time.sleep(random.uniform(0.001, 0.050))
    i += 1
