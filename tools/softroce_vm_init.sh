#!/bin/busybox sh
# /init of the Soft-RoCE VM's initramfs (packed by tools/softroce_vm_image.sh; booted by
# tools/softroce_vm.sh, which passes the rfrpc.* kernel parameters below).
#
# 1. loads the modules listed in /modules.list (virtio, 9p, overlay, rdma_rxe, ...), in order;
# 2. mounts the host's / (9p tag "hostroot", read-only) with a tmpfs overlay on top at /newroot,
#    so the guest can write anywhere and every write vanishes with the VM;
# 3. puts rfrpc.ip on rfrpc.dev (eth0 by default) and creates the Soft-RoCE device rxe0 on it,
#    waiting (bounded) until port 1 is ACTIVE with its IPv4 GID at index 1;
# 4. runs `bash <rfrpc.run>/cmd.sh` chrooted into /newroot under `timeout rfrpc.tmo`, with its
#    stdout/stderr on the virtio-serial ports org.rfrpc.out/err, then writes the exit status to
#    port org.rfrpc.rc and powers off.
# Every step that could hang runs under a timeout; the host also kills the VM after its own timeout.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

log() { echo "rfrpc-init: [$(cut -d" " -f1 /proc/uptime)] $*" > /dev/console; }

log "init started"
for m in $(cat /modules.list); do
  insmod "/lib/modules/$m" 2>/tmp/insmod.err || log "insmod $m failed: $(cat /tmp/insmod.err)"
done

log "modules loaded"
RUN= ; DEV=eth0 ; IP=10.11.0.1/24 ; TMO=600
for arg in $(cat /proc/cmdline); do
  case $arg in
    rfrpc.run=*) RUN=${arg#*=} ;;
    rfrpc.dev=*) DEV=${arg#*=} ;;
    rfrpc.ip=*) IP=${arg#*=} ;;
    rfrpc.tmo=*) TMO=${arg#*=} ;;
  esac
done

mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /host \
  || log "mounting the host root failed"
mount -t tmpfs -o size=50%,mode=755 tmpfs /rw && mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot 2>/tmp/ovl.err \
  || { log "overlay failed: $(cat /tmp/ovl.err); root is read-only"; mount --bind /host /newroot; }
R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
mount -t tmpfs tmpfs $R/run

ip link set lo up
[ "$DEV" = dummy0 ] && ip link add dummy0 type dummy
ip addr add "$IP" dev "$DEV"
ip link set "$DEV" up
timeout 30 chroot $R /usr/bin/rdma link add rxe0 type rxe netdev "$DEV" || log "rdma link add failed"
P=/sys/class/infiniband/rxe0/ports/1
for _ in $(seq 100); do
  case "$(cat $P/state 2>/dev/null)" in *ACTIVE*)
    case "$(cat $P/gids/1 2>/dev/null)" in ''|0000:0000:0000:0000:0000:0000:0000:0000) ;; *) break ;; esac ;;
  esac
  sleep 0.1
done
log "rxe0 $(cat $P/state 2>/dev/null) gid1 $(cat $P/gids/1 2>/dev/null) at uptime $(cut -d' ' -f1 /proc/uptime)"

OUT=/dev/console ; ERR=/dev/console ; RC=/dev/null
for p in /sys/class/virtio-ports/*; do
  case "$(cat "$p/name" 2>/dev/null)" in
    org.rfrpc.out) OUT=/dev/${p##*/} ;;
    org.rfrpc.err) ERR=/dev/${p##*/} ;;
    org.rfrpc.rc) RC=/dev/${p##*/} ;;
  esac
done

if [ -n "$RUN" ] && [ -r "$R$RUN/cmd.sh" ]; then
  chroot $R /usr/bin/timeout -k 5 "$TMO" /bin/bash "$RUN/cmd.sh" < /dev/null > "$OUT" 2> "$ERR"
  rc=$?
  log "command exited $rc at uptime $(cut -d' ' -f1 /proc/uptime)"
  echo "$rc" > "$RC"
else
  log "no command (rfrpc.run=$RUN)"
fi
sync
poweroff -f
