#!/usr/bin/env bash
# PKI for one test environment, generated with openssl. Every certificate is
# short-lived and specific to its state directory.

pki_ca() { # name cn
	local dir=$1 name=$2 cn=$3
	openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 30 \
		-keyout "$dir/$name.key" -out "$dir/$name.crt" -subj "/CN=$cn" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}

# pki_cert dir ca name subject eku [san]
pki_cert() {
	local dir=$1 ca=$2 name=$3 subj=$4 eku=$5 san=${6:-}
	local ext="$dir/$name.ext"
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		[[ -n "$san" ]] && echo "subjectAltName=$san"
	} >"$ext"
	openssl req -newkey rsa:2048 -nodes -sha256 -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "$subj" 2>/dev/null
	openssl x509 -req -sha256 -days 30 -in "$dir/$name.csr" -CA "$dir/$ca.crt" -CAkey "$dir/$ca.key" \
		-CAcreateserial -out "$dir/$name.crt" -extfile "$ext" 2>/dev/null
	rm -f "$dir/$name.csr" "$ext"
}

pki_generate() {
	local dir=$1
	mkdir -p "$dir"
	pki_ca "$dir" ca "testenv-cluster-ca"
	pki_ca "$dir" front-proxy-ca "testenv-front-proxy-ca"
	pki_ca "$dir" console-ca "kruntimes-console-ca"
	pki_ca "$dir" gateway-ca "testenv-runtime-gateway-ca"
	pki_cert "$dir" ca apiserver "/CN=kube-apiserver" serverAuth \
		"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.0.0.1"
	pki_cert "$dir" ca kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	pki_cert "$dir" ca kubelet "/CN=testenv-node" serverAuth "DNS:localhost,IP:127.0.0.1"
	pki_cert "$dir" front-proxy-ca front-proxy-client "/CN=front-proxy-client" clientAuth
	# Signed by the front-proxy CA but with a CN outside the allowed names (negative tests).
	pki_cert "$dir" front-proxy-ca front-proxy-rogue "/CN=not-the-front-proxy" clientAuth
	pki_cert "$dir" console-ca console "/CN=kruntimes-console" serverAuth,clientAuth \
		"DNS:kruntimes-console.kruntimes-system.svc,DNS:kruntimes-console.kruntimes-system.svc.cluster.local,DNS:localhost,IP:127.0.0.1"
	pki_cert "$dir" gateway-ca gateway "/CN=runtime-gateway" serverAuth "DNS:localhost,IP:127.0.0.1"
	# A user certificate from the cluster client CA (client-certificate authentication tests).
	pki_cert "$dir" ca user-viewer "/O=testenv:viewers/CN=viewer" clientAuth
	openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
	openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
	rm -f "$dir"/*.srl
}

# PKI of a hack/cluster node: cluster CA, front-proxy CA, one client
# certificate per component (the identities Kubernetes' bootstrap RBAC knows),
# the kubelet's serving certificate and the ServiceAccount key pair.
#   pki_generate_cluster DIR NODE NODE_IP KUBERNETES_SERVICE_IP
pki_generate_cluster() {
	local dir=$1 node=$2 node_ip=$3 svc_ip=$4
	mkdir -p "$dir"
	pki_ca "$dir" ca "kruntimes-cluster-ca"
	pki_ca "$dir" front-proxy-ca "kruntimes-cluster-front-proxy-ca"
	pki_cert "$dir" ca apiserver "/CN=kube-apiserver" serverAuth \
		"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$node_ip,IP:$svc_ip"
	pki_cert "$dir" ca apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	pki_cert "$dir" ca kubelet "/CN=system:node:$node" serverAuth "DNS:$node,IP:$node_ip"
	pki_cert "$dir" ca kubelet-client "/O=system:nodes/CN=system:node:$node" clientAuth
	pki_cert "$dir" ca kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
	pki_cert "$dir" ca kube-scheduler "/CN=system:kube-scheduler" clientAuth
	pki_cert "$dir" ca kube-proxy "/CN=system:kube-proxy" clientAuth
	pki_cert "$dir" front-proxy-ca front-proxy-client "/CN=front-proxy-client" clientAuth
	openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
	openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
	rm -f "$dir"/*.srl
	chmod 600 "$dir"/*.key
}
