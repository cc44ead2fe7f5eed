#!/usr/bin/env bash
# Builds the kind path's images into the private Docker daemon
# (hack/kind/dockerd.sh), from Debian's packages and Go-built binaries only:
# nothing is pulled. Each image is tagged with a hash of what it is made
# from, and built only when that tag is missing.
#
#   hack/kind/images.sh base    # node base: systemd, containerd, runc, CNI plugins, kind's files
#   hack/kind/images.sh node    # the node image: base + Kubernetes KUBE_VERSION, its images preloaded
#   hack/kind/images.sh binaries  # only what the node of KUBE_VERSION runs, built into bin/kind-node/
#   hack/kind/images.sh lb      # the Docker provider's load balancer: Debian's haproxy
#   hack/kind/images.sh providers  # Cluster API's managers, from bin/capi-* (make capi-bins)
#
# Needs root (debootstrap, chroot) and the network to Debian's mirror.
source "$(dirname "$0")/errexit.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
state=${KIND_STATE:-$root/.kind}
export DOCKER_HOST=${DOCKER_HOST:-$("$root/hack/kind/dockerd.sh" host)}
suite=bookworm
repo=kubectl-topology-kind

log() { echo "kind images: $(date -u +%T) $*" >&2; }

# mirror is the Debian mirror this machine's apt uses.
mirror() {
	local m
	m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	[[ -n $m ]] || m=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
	echo "${m:-http://deb.debian.org/debian}"
}

# kind_dir is kind's module, pinned by hack/kind/tools, for its base image files.
kind_dir() { (cd "$root/hack/kind/tools" && go list -m -f '{{.Dir}}' sigs.k8s.io/kind); }

# tag_for names an image by a hash of its inputs.
tag_for() { # name inputs...
	local name=$1; shift
	echo "$repo/$name:$(cat "$@" | sha256sum | cut -c1-12)"
}

have() { docker image inspect "$1" >/dev/null 2>&1; }

# ensure_debootstrap makes `debootstrap` the machine's, or Debian's package
# unpacked under $state (a function of that name), so that make test
# installs nothing system-wide. The image functions call it by name, so
# their hashes, and the tags of images already built, stay as they were.
ensure_debootstrap() {
	command -v debootstrap >/dev/null && return
	local dir=$state/debootstrap
	if [[ ! -x $dir/usr/sbin/debootstrap ]]; then
		log "fetching debootstrap from Debian's packages into $dir"
		rm -rf "$dir" "$state"/debootstrap_*.deb
		(cd "$state" && { apt-get download debootstrap >/dev/null 2>&1 || { apt-get update -qq && apt-get download debootstrap; }; })
		dpkg-deb -x "$state"/debootstrap_*.deb "$dir"
	fi
	export DEBOOTSTRAP_DIR=$dir/usr/share/debootstrap
	eval "debootstrap() { \"$dir/usr/sbin/debootstrap\" \"\$@\"; }"
}

# Packages of the node base: kind's list, with Debian's containerd, runc and
# CNI plugins in place of the ones kind builds from git.
base_packages=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,fuse-overlayfs,nfs-common,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins,socat,ebtables

base() {
	local kind; kind=$(kind_dir)
	local tag; tag=$(tag_for base <(declare -f base) <(echo "$base_packages $suite") <(cd "$kind/images/base/files" && find . -type f -exec sha256sum {} + | sort))
	if have "$tag"; then echo "$tag"; return; fi
	ensure_debootstrap
	local rootfs=$state/rootfs/base
	rm -rf "$rootfs"; mkdir -p "$rootfs"
	log "debootstrap $suite with the node's packages (about 2-4 minutes)"
	debootstrap --variant=minbase --include="$base_packages" "$suite" "$rootfs" "$(mirror)" >"$state/debootstrap.log" 2>&1 ||
		{ tail -20 "$state/debootstrap.log" >&2; log "debootstrap failed: it needs Debian's mirror ($(mirror))"; exit 1; }
	log "adding kind's base files"
	local files=$kind/images/base/files
	cp -r --no-preserve=mode "$files/etc/." "$rootfs/etc/"
	mkdir -p "$rootfs/kind/bin" "$rootfs/usr/local/bin" "$rootfs/LICENSES"
	cp -r --no-preserve=mode "$files/kind/." "$rootfs/kind/"
	install -m 0755 "$files"/usr/local/bin/* "$rootfs/usr/local/bin/"
	chmod 0755 "$rootfs"/kind/bin/*
	# Debian's binaries where kind's units and entrypoint look for its own.
	for b in containerd ctr containerd-shim-runc-v2; do ln -sf "/usr/bin/$b" "$rootfs/usr/local/bin/$b"; done
	mkdir -p "$rootfs/opt/cni"; rm -rf "$rootfs/opt/cni/bin"; ln -s /usr/lib/cni "$rootfs/opt/cni/bin"
	# The sandbox's oom_score_adj cannot be lowered on these hosts (no
	# CAP_SYS_RESOURCE): containerd must not try.
	sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$rootfs/etc/containerd/config.toml"
	chroot "$rootfs" /bin/bash -euc '
		find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
		rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
			/lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
			/lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
		echo "ReadKMsg=no" >> /etc/systemd/journald.conf
		systemctl enable kubelet.service containerd.service undo-mount-hacks.service
		systemctl mask systemd-binfmt.service
		mkdir -p /etc/kubernetes/manifests
		ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer|length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" | jq "del(.process.rlimits)" > /etc/containerd/cri-base.json
		apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /usr/share/doc/* /usr/share/man/*
	'
	log "importing the root filesystem as $tag"
	tar -C "$rootfs" -c . | docker import - "$repo/base-rootfs:tmp" >/dev/null
	# docker import (20.10) cannot set STOPSIGNAL: a two-line build from the
	# local image does, pulling nothing.
	local ctx; ctx=$(mktemp -d)
	printf 'FROM %s\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]\n' "$repo/base-rootfs:tmp" >"$ctx/Dockerfile"
	DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null
	rm -rf "$ctx" "$rootfs"
	docker image rm "$repo/base-rootfs:tmp" >/dev/null
	echo "$tag"
}

# kube_version is the node image's Kubernetes release; each one the kind
# path builds is pinned by a module hack/kind/kubernetes*/ (the first is
# the management cluster's).
kube_version=${KUBE_VERSION:-$(cd "$root/hack/kind/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)}
bin=${KIND_BIN:-$root/bin/kind-node/$kube_version}

# kube_module is the directory of the module that pins $kube_version.
kube_module() {
	local m
	for m in "$root"/hack/kind/kubernetes*/go.mod; do
		if grep -qE "^[[:space:]]*k8s.io/kubernetes $kube_version\$" "$m"; then dirname "$m"; return; fi
	done
	log "no module under hack/kind/kubernetes*/ pins Kubernetes $kube_version: add one (a copy of hack/kind/kubernetes with the version changed, then go mod tidy)"
	exit 1
}

# node_binaries builds what the node runs, pinned by the Kubernetes module,
# hack/kind/crictl, hack/kind/coredns and hack/kind/flannel, into $bin
# (kept between runs).
node_binaries() {
	mkdir -p "$bin"
	local kmod; kmod=$(kube_module)
	local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
	local cmd missing=()
	for cmd in kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
		if [[ ! -x $bin/$cmd || $kmod/go.mod -nt $bin/$cmd ]]; then
			reuse "$cmd" "$kube_version" || missing+=("$cmd")
		fi
	done
	if ((${#missing[@]})); then
		log "building ${missing[*]} $kube_version"
		# One go build: each link runs beside the others' compiles.
		(cd "$kmod" && GONOSUMDB=k8s.io/kubernetes CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/" "${missing[@]/#/k8s.io/kubernetes/cmd/}")
		(cd "$bin" && touch "${missing[@]}")
	fi
	if [[ ! -x $bin/etcd || $kmod/go.mod -nt $bin/etcd ]]; then
		local etcd_version; etcd_version=$(cd "$kmod" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
		if ! reuse etcd "${etcd_version#v}"; then
			log "building etcd"
			(cd "$kmod" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$bin/etcd" go.etcd.io/etcd/server/v3)
		fi
	fi
	if [[ ! -x $bin/crictl || $root/hack/kind/crictl/go.mod -nt $bin/crictl ]]; then
		log "building crictl"
		(cd "$root/hack/kind/crictl" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$bin/crictl" sigs.k8s.io/cri-tools/cmd/crictl)
	fi
	if [[ ! -x $bin/coredns || $root/hack/kind/coredns/go.mod -nt $bin/coredns ]]; then
		log "building coredns"
		(cd "$root/hack/kind/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$bin/coredns" github.com/coredns/coredns)
	fi
	if [[ ! -x $bin/flanneld || $root/hack/kind/flannel/go.mod -nt $bin/flanneld ]]; then
		log "building flanneld"
		# Its UDP backend is cgo; the image runs it on the bookworm base.
		(cd "$root/hack/kind/flannel" && CGO_ENABLED=1 go build -trimpath -ldflags '-s -w' -o "$bin/flanneld" github.com/flannel-io/flannel)
	fi
	if [[ ! -x $bin/pause || $root/hack/kind/pause.c -nt $bin/pause ]]; then
		log "building pause"
		gcc -Os -static -o "$bin/pause" "$root/hack/kind/pause.c"
	fi
}

# reuse copies bin/NAME into $bin when make control-plane-bins built it
# from the same release, built the same way (static, trimmed, stripped):
# building it again would cost minutes of both cores for the same program.
reuse() { # name version
	local have=$root/bin/$1 out
	[[ -x $have ]] || return 1
	case $1 in
	kubectl) out=$("$have" version --client 2>/dev/null | head -1) ;;
	*) out=$("$have" --version 2>/dev/null | head -1) ;;
	esac
	[[ $out == *" $2" ]] || return 1
	log "using bin/$1 ($out)"
	cp "$have" "$bin/$1"
}

# component_image builds a one-binary image of a control-plane component,
# tagged as kubeadm asks for it, into a tarball in $2.
component_image() { # binary out-dir from tag...
	local binary=$1 out=$2 from=$3; shift 3
	local ctx; ctx=$(mktemp -d)
	cp "$bin/$binary" "$ctx/$binary"
	printf 'FROM %s\nCOPY %s /usr/local/bin/%s\nENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nENTRYPOINT ["/usr/local/bin/%s"]\n' "$from" "$binary" "$binary" "$binary" >"$ctx/Dockerfile"
	local args=() t
	for t in "$@"; do args+=(-t "$t"); done
	DOCKER_BUILDKIT=0 docker build -q "${args[@]}" "$ctx" >/dev/null
	docker save "$@" -o "$out/$binary.tar"
	docker image rm "$@" >/dev/null
	rm -rf "$ctx"
}

node() {
	local base_tag; base_tag=$(base)
	node_binaries
	local minor; minor=$(echo "$kube_version" | cut -d. -f1-2)
	local tag; tag=$(tag_for "node" <(declare -f node component_image) <(echo "$base_tag $kube_version") <(cd "$bin" && sha256sum -- *))
	tag="${tag%%:*}:$kube_version-${tag##*:}"
	if have "$tag"; then echo "$tag"; return; fi
	local images; images=$(mktemp -d)
	log "building the control-plane images of $kube_version"
	local r=registry.k8s.io
	component_image kube-apiserver "$images" scratch "$r/kube-apiserver:$kube_version"
	component_image kube-controller-manager "$images" scratch "$r/kube-controller-manager:$kube_version"
	component_image kube-scheduler "$images" scratch "$r/kube-scheduler:$kube_version"
	# kube-proxy programs iptables: it runs on the node base, which has them.
	component_image kube-proxy "$images" "$base_tag" "$r/kube-proxy:$kube_version"
	# flannel, the workload clusters' CNI (examples/kind/flannel.yaml), also
	# programs iptables and runs its CNI-configuration script with bash.
	component_image flanneld "$images" "$base_tag" "$repo/flannel:$(cd "$root/hack/kind/flannel" && go list -m -f '{{.Version}}' github.com/flannel-io/flannel)"
	local etcd_tag coredns_tag pause_tag
	etcd_tag=$("$bin/kubeadm" config images list --kubernetes-version "$kube_version" 2>/dev/null | grep /etcd:)
	coredns_tag=$("$bin/kubeadm" config images list --kubernetes-version "$kube_version" 2>/dev/null | grep /coredns)
	pause_tag=$("$bin/kubeadm" config images list --kubernetes-version "$kube_version" 2>/dev/null | grep /pause:)
	component_image etcd "$images" scratch "$etcd_tag"
	component_image coredns "$images" scratch "$coredns_tag"
	# kind's containerd config names pause:3.10 as the sandbox image.
	component_image pause "$images" scratch "$pause_tag" "$r/pause:3.10"

	log "assembling the node image $tag"
	local c; c=$(docker run -d --privileged --cgroupns=private --tmpfs /tmp --tmpfs /run --security-opt seccomp=unconfined --security-opt apparmor=unconfined "$base_tag")
	trap 'docker rm -f "${c:-}" >/dev/null 2>&1 || true; rm -rf "${images:-}"; trap - RETURN' RETURN
	docker cp "$bin/kubelet" "$c:/usr/bin/kubelet"
	docker cp "$bin/kubeadm" "$c:/usr/bin/kubeadm"
	docker cp "$bin/kubectl" "$c:/usr/bin/kubectl"
	docker cp "$bin/crictl" "$c:/usr/local/bin/crictl"
	docker exec "$c" sh -c "echo $kube_version > /kind/version"
	# kubelet 1.35 and later refuse a cgroup v1 host unless told, and a class
	# (upstream's quick-start among them) cannot know its host: the image
	# tells every kubelet through kind's own override file. No-op on cgroup v2.
	docker exec "$c" sh -c 'echo "KUBELET_EXTRA_ARGS=--fail-cgroupv1=false" > /etc/default/kubelet'
	# No CNI configuration: a node is Ready once its cluster's CNI writes
	# one (flannel on workload machines; a mounted bridge on the kind node).
	docker exec "$c" mkdir -p /etc/cni/net.d
	for _ in $(seq 60); do docker exec "$c" ctr --address /run/containerd/containerd.sock version >/dev/null 2>&1 && break; sleep 1; done
	docker exec "$c" mkdir -p /kind/images
	local f
	for f in "$images"/*.tar; do
		docker cp "$f" "$c:/kind/images/"
		docker exec "$c" ctr -n k8s.io images import --no-unpack --all-platforms --digests "/kind/images/$(basename "$f")" >/dev/null
	done
	# Pinned, so that kubelet's image garbage collection never removes what
	# no registry could bring back (containerd 1.6's import cannot label).
	docker exec "$c" sh -c 'for i in $(ctr -n k8s.io images ls -q); do ctr -n k8s.io images label "$i" io.cri-containerd.pinned=pinned >/dev/null; done' 
	docker exec "$c" rm -rf /kind/images
	docker exec "$c" sh -c 'systemctl stop containerd || true'
	docker commit --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' "$c" "$tag" >/dev/null
	echo "$tag"
}

# lb is the load balancer the Docker provider starts per workload cluster,
# under the tag it asks for. It runs Debian's haproxy through a wrapper that
# adds `no strict-limits` to each configuration the provider writes: the
# engine's open-file limit here is below what that configuration asks, and
# without CAP_SYS_RESOURCE nothing can raise it.
lb_tag=kindest/haproxy:v20230606-42a2262b
lb() {
	local tag; tag=$(tag_for lb <(declare -f lb) "$root/hack/kind/haproxy-wrapper.sh" "$root/hack/kind/haproxy.cfg")
	if have "$tag"; then docker tag "$tag" "$lb_tag"; echo "$lb_tag"; return; fi
	ensure_debootstrap
	local rootfs=$state/rootfs/lb
	rm -rf "$rootfs"; mkdir -p "$rootfs"
	log "debootstrap $suite with haproxy"
	debootstrap --variant=minbase --include=haproxy "$suite" "$rootfs" "$(mirror)" >"$state/debootstrap-lb.log" 2>&1 ||
		{ tail -20 "$state/debootstrap-lb.log" >&2; log "debootstrap failed: it needs Debian's mirror ($(mirror))"; exit 1; }
	install -m 0755 "$root/hack/kind/haproxy-wrapper.sh" "$rootfs/usr/local/bin/haproxy"
	mkdir -p "$rootfs/usr/local/etc/haproxy"
	install -m 0644 "$root/hack/kind/haproxy.cfg" "$rootfs/usr/local/etc/haproxy/haproxy.cfg"
	rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
	tar -C "$rootfs" -c . | docker import --change 'ENTRYPOINT ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]' - "$tag" >/dev/null
	rm -rf "$rootfs"
	docker tag "$tag" "$lb_tag"
	echo "$lb_tag"
}

# providers builds an image per Cluster API manager from bin/capi-*. The
# kubeadm and core managers run as non-root, as their Deployments ask; the
# Docker provider as root, to reach the engine's socket.
capi_version=${CAPI_VERSION:-v1.14.2}
providers() {
	local name user ctx tag
	for name in capi-core capi-kubeadm-bootstrap capi-kubeadm-control-plane capi-docker; do
		[[ -x $root/bin/$name ]] || { log "bin/$name is missing: run make capi-bins"; exit 1; }
		tag="$repo/$name:$capi_version-$(sha256sum "$root/bin/$name" | cut -c1-12)"
		if ! have "$tag"; then
			user=65532; [[ $name == capi-docker ]] && user=0
			ctx=$(mktemp -d)
			cp "$root/bin/$name" "$ctx/manager"
			printf 'FROM %s\nCOPY manager /manager\nUSER %s\nENTRYPOINT ["/manager"]\n' scratch "$user" >"$ctx/Dockerfile"
			DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null
			rm -rf "$ctx"
		fi
		echo "$name=$tag"
	done
}

main() {
	case ${1:-} in
	base) base ;;
	node) node ;;
	binaries) node_binaries ;;
	lb) lb ;;
	providers) providers ;;
	*) echo "usage: $0 base|node|binaries|lb|providers" >&2; return 2 ;;
	esac
}

# On one line, so that bash has read it all before it runs: editing the
# script during a long build must not change what the running one does.
main "$@"; exit $?
