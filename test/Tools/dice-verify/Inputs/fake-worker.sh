#!/bin/sh
# Stands in for dice-verify-worker in CPU-only tests: says ready and answers
# every request with an error naming its scratch directory (`worker-<slot>`),
# so that a test sees which workers ran candidates. With
# FAKE_WORKER_BARRIER=N a request is answered only once N workers have held
# one (or after 20 s): N candidates then go to N different workers.
echo '{"ready": true, "worker": "fake"}' >&3
slot=$(basename "$DICE_WORKER_SCRATCH")
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"half_rtol":[^,]*,"id":\([0-9]*\).*/\1/p')
  if [ -n "$FAKE_WORKER_BARRIER" ]; then
    touch busy
    tries=0
    while [ "$(ls ../worker-*/busy 2>/dev/null | wc -l)" -lt "$FAKE_WORKER_BARRIER" ] &&
          [ "$tries" -lt 200 ]; do
      sleep 0.1
      tries=$((tries + 1))
    done
  fi
  echo "{\"id\": $id, \"error\": \"fake worker $slot\"}" >&3
done
