# permit_monit_access: Jammy stemcells let only processes in the net_cls cgroup
# "monit-api-access" (classid 0xb0540001, 2958295041) reach monit's port 2822
# (an iptables rule matches the classid); the agent and every `monit` command
# join it. The VM mounts net_cls at boot (v1-hierarchies.service); where none is
# mounted there is nothing to join and no rule to pass.
permit_monit_access() {
  local d
  d=$(awk '$3 == "cgroup" && $4 ~ /(^|,)net_cls(,|$)/ {print $2; exit}' /proc/self/mounts)
  [ -n "$d" ] || return 0
  mkdir -p "$d/monit-api-access"
  echo 2958295041 >"$d/monit-api-access/net_cls.classid"
  echo $$ >"$d/monit-api-access/tasks"
}
