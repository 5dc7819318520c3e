package localaddons

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// The storage add-on as kind installs it: the StorageClass "standard" (the
// cluster's default), provisioner rancher.io/local-path, volumes bound where
// their first pod lands (WaitForFirstConsumer) and deleted with their claim.
const (
	StorageClass       = "standard"
	Provisioner        = "rancher.io/local-path"
	StorageNamespace   = "local-path-storage"
	storageConfigMap   = "local-path-config"
	provisionerProcess = "local-path-provisioner"
	// startedLine is what the provisioner logs (with --debug) once its
	// controller runs.
	startedLine = "Provisioner started"
)

// VolumesDir is where the provisioner makes each volume's directory on the
// node: under the add-ons' folder, so removing the stack removes the data.
func VolumesDir(dir string) string { return filepath.Join(dir, "volumes") }

func (a *Addons) startStorage(ctx context.Context, cs kubernetes.Interface, cp *localcluster.ControlPlane, opts Options) error {
	volumes := VolumesDir(opts.Dir)
	if err := os.MkdirAll(volumes, 0o755); err != nil {
		return err
	}
	if err := ensureStorageNamespace(ctx, cs); err != nil {
		return err
	}
	cm, err := storageConfig(volumes, opts.HelperImage)
	if err != nil {
		return err
	}
	if err := createOrUpdateConfigMap(ctx, cs, cm); err != nil {
		return err
	}
	if err := ensureStorageClass(ctx, cs); err != nil {
		return err
	}
	p, err := a.start(provisionerProcess, opts.Provisioner, []string{
		"--debug", "start",
		"--kubeconfig", cp.Kubeconfig,
		"--provisioner-name", Provisioner,
		"--namespace", StorageNamespace,
		"--configmap-name", storageConfigMap,
		"--service-account-name", "default",
		"--helper-image", opts.HelperImage,
	}, opts)
	if err != nil {
		return err
	}
	logPath := filepath.Join(opts.Dir, provisionerProcess+".log")
	return supervise.Poll(ctx, "the local-path provisioner's controller", []*supervise.Process{p}, func(context.Context) (bool, error) {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return false, err
		}
		return strings.Contains(string(b), startedLine), fmt.Errorf("%s does not say %q yet", logPath, startedLine)
	})
}

// ensureStorageNamespace creates the helper pods' namespace. They mount the
// volumes' parent directory from the node (hostPath) and run as root to make
// and remove directories there, so Pod Security lets that namespace be
// privileged; no team can create pods in it.
func ensureStorageNamespace(ctx context.Context, cs kubernetes.Interface) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: StorageNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
	}}}
	_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// storageConfig is the provisioner's ConfigMap, as upstream's
// deploy/local-path-storage.yaml writes it, with the volumes under volumes and
// a helper pod that never pulls and runs as root (the workload image runs as
// nonroot).
func storageConfig(volumes, helperImage string) (*corev1.ConfigMap, error) {
	config, err := json.Marshal(map[string]any{
		"nodePathMap": []map[string]any{{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": []string{volumes}}},
	})
	if err != nil {
		return nil, err
	}
	helper := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "helper-pod"},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/disk-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name:            "helper-pod",
				Image:           helperImage,
				ImagePullPolicy: corev1.PullNever,
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)},
			}},
		},
	}
	helperYAML, err := yaml.Marshal(helper)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: storageConfigMap, Namespace: StorageNamespace},
		Data: map[string]string{
			"config.json":    string(config),
			"setup":          "#!/bin/sh\nset -eu\nmkdir -m 0777 -p \"$VOL_DIR\"\n",
			"teardown":       "#!/bin/sh\nset -eu\nrm -rf \"$VOL_DIR\"\n",
			"helperPod.yaml": string(helperYAML),
		},
	}, nil
}

func createOrUpdateConfigMap(ctx context.Context, cs kubernetes.Interface, cm *corev1.ConfigMap) error {
	_, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cs.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	return err
}

// DefaultStorageClass is the StorageClass the add-on installs.
func DefaultStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClass, Annotations: map[string]string{
			"storageclass.kubernetes.io/is-default-class": "true",
		}},
		Provisioner:       Provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

func ensureStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.StorageV1().StorageClasses().Create(ctx, DefaultStorageClass(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
