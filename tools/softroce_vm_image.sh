#!/usr/bin/env bash
# Builds, once, what tools/softroce_vm.sh boots, and prints where it is:
#
#   KERNEL=<cache>/<kver>/vmlinux                    uncompressed ELF, qemu boots it via its PVH entry
#   INITRD=<cache>/<kver>/initramfs-<key>.cpio.gz   busybox + the modules below + softroce_vm_init.sh
#
# The kernel is Debian's stock amd64 kernel: the linux-image-6.1.0-N-amd64 package that the
# `linux-image-amd64` meta-package currently depends on (resolved with apt-cache). It is fetched with
# `apt-get download` and unpacked with `dpkg -x` into a scratch folder; it is never installed on the
# host. The host's own kernel has no RDMA support; this one has rdma_rxe (Soft-RoCE).
#
# Cache: ${RFRPC_VM_CACHE:-/var/cache/rfrpc-vm}, outside any clone. Holds the .deb (~70 MB), the
# vmlinux (~60 MB) and the initramfs (~2.5 MB). Each file is rebuilt only when missing; the initramfs
# <key> hashes the init script, the module list and busybox, so editing the init rebuilds it. Builders
# hold an flock on <cache>/.lock and publish every file by atomic rename, so concurrent runs are safe
# and readers never see a half-written file (readers take no lock).
#
# Usage: tools/softroce_vm_image.sh            prints KERNEL=... and INITRD=... on stdout
# Knobs: RFRPC_VM_CACHE   cache folder (default /var/cache/rfrpc-vm)
#        RFRPC_VM_KPKG    kernel package to use instead of the one apt-cache resolves
# Needs: bash tools/setup.sh --vm (busybox-static, cpio, kmod, xz-utils) and `apt-get update` done once.
set -euo pipefail

CACHE=${RFRPC_VM_CACHE:-/var/cache/rfrpc-vm}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INIT=$HERE/softroce_vm_init.sh
BUSYBOX=/bin/busybox
# Modules for: virtio devices, the 9p root, the tmpfs overlay, Soft-RoCE + the verbs user interface.
# rdma_rxe cannot add eth0 without a crc32 implementation, which nothing pulls in as a dependency.
MODULES=(crc32_generic crc32-pclmul virtio_pci virtio_net virtio_console 9pnet_virtio 9p overlay
  rdma_rxe ib_uverbs rdma_ucm ib_umad dummy)

log() { echo "softroce_vm_image: $*" >&2; }
die() { log "$*"; exit 2; }

# The kernel package linux-image-amd64 depends on, e.g. linux-image-6.1.0-56-amd64.
resolve_kpkg() {
  if [ -n "${RFRPC_VM_KPKG:-}" ]; then echo "$RFRPC_VM_KPKG"; return; fi
  apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9.]+-[0-9]+-amd64$/ { print $2; exit }'
}

KPKG=$(resolve_kpkg || true)
if [ -z "$KPKG" ]; then
  # No package lists (offline, or apt-get update never ran): fall back to the newest cached kernel.
  KPKG=$(ls -1 "$CACHE"/debs/linux-image-*.deb 2>/dev/null | sed 's|.*/||; s|_.*||' | sort -V | tail -1)
  [ -n "$KPKG" ] || die "apt-cache does not know linux-image-amd64; run apt-get update first"
  log "apt-cache gave no kernel package; using cached $KPKG"
fi
KVER=${KPKG#linux-image-}
KDIR=$CACHE/$KVER
VMLINUX=$KDIR/vmlinux
KEY=$({ cat "$INIT"; printf '%s\n' "${MODULES[@]}"; cksum < "$BUSYBOX"; } | sha256sum | cut -c1-16)
INITRD=$KDIR/initramfs-$KEY.cpio.gz

print_paths() { echo "KERNEL=$VMLINUX"; echo "INITRD=$INITRD"; }

# Fast path: everything is there (files only ever appear complete, by rename).
if [ -s "$VMLINUX" ] && [ -s "$INITRD" ]; then print_paths; exit 0; fi

[ -r "$INIT" ] || die "missing $INIT"
[ -x "$BUSYBOX" ] || die "missing $BUSYBOX (bash tools/setup.sh --vm)"
for t in cpio modprobe depmod xz dpkg apt-get flock; do
  command -v "$t" >/dev/null || die "missing $t (bash tools/setup.sh --vm)"
done

mkdir -p "$CACHE/debs" "$KDIR"
exec 9>"$CACHE/.lock"
flock -w 1800 9 || die "timed out waiting for $CACHE/.lock"
if [ -s "$VMLINUX" ] && [ -s "$INITRD" ]; then print_paths; exit 0; fi  # another run built it

WORK=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"  # apt-get download drops to the _apt user, which must reach $WORK/dl
T0=$SECONDS

# 1. The .deb, kept so that a new initramfs does not download again.
DEB=$(ls -1 "$CACHE/debs/${KPKG}_"*.deb 2>/dev/null | tail -1 || true)
if [ -z "$DEB" ]; then
  log "downloading $KPKG"
  mkdir "$WORK/dl"
  # apt drops to the _apt user for downloads; let it write here (else a harmless warning).
  chmod 777 "$WORK/dl"
  (cd "$WORK/dl" && timeout 900 apt-get download -q "$KPKG" >&2) || die "apt-get download $KPKG failed"
  f=$(ls -1 "$WORK"/dl/*.deb | head -1)
  mv -f "$f" "$CACHE/debs/"
  DEB=$CACHE/debs/$(basename "$f")
fi

# 2. Unpack (not install) and index the modules; the package ships no modules.dep.
log "unpacking $(basename "$DEB")"
dpkg -x "$DEB" "$WORK/root"
depmod -b "$WORK/root" "$KVER"

# 3. vmlinux: the xz payload inside the bzImage. Booting the ELF saves ~3 s per boot under TCG.
if [ ! -s "$VMLINUX" ]; then
  VMLINUZ=$WORK/root/boot/vmlinuz-$KVER
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$VMLINUZ" | head -1 | cut -d: -f1)
  [ -n "$off" ] || die "no xz payload in $VMLINUZ"
  tail -c +"$((off + 1))" "$VMLINUZ" > "$WORK/payload.xz"  # ends with padding: --single-stream
  xz -dc --single-stream "$WORK/payload.xz" > "$WORK/vmlinux"
  [ "$(head -c 4 "$WORK/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] || die "extracted vmlinux is not ELF"
  mv -f "$WORK/vmlinux" "$VMLINUX"
fi

# 4. Initramfs: busybox, the modules in dependency order, the init.
if [ ! -s "$INITRD" ]; then
  R=$WORK/initramfs
  mkdir -p "$R"/{bin,sbin,dev,proc,sys,host,newroot,rw,tmp,run,lib/modules}
  cp "$BUSYBOX" "$R/bin/busybox"
  cp "$INIT" "$R/init" && chmod 755 "$R/init"
  : > "$R/modules.list"
  for m in "${MODULES[@]}"; do
    modprobe -d "$WORK/root" -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
  done | awk '!seen[$0]++' | while read -r ko; do
    b=$(basename "$ko")
    case $b in
      *.ko.xz) xz -dc "$ko" > "$R/lib/modules/${b%.xz}"; b=${b%.xz} ;;
      *) cp "$ko" "$R/lib/modules/$b" ;;
    esac
    echo "$b" >> "$R/modules.list"
  done
  [ "$(wc -l < "$R/modules.list")" -ge "${#MODULES[@]}" ] || die "modules missing: $(cat "$R/modules.list")"
  (cd "$R" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) > "$WORK/initramfs.cpio.gz"
  mv -f "$WORK/initramfs.cpio.gz" "$INITRD"
  log "initramfs $(du -h "$INITRD" | cut -f1): $(tr '\n' ' ' < "$R/modules.list")"
fi
log "built $KVER in $((SECONDS - T0)) s"
print_paths
