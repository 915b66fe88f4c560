#!/bin/bash
# The image's entry point.  Spark on Kubernetes (spark-submit --master k8s://…, and the Kubeflow Spark operator,
# which runs it) starts the driver's and the executors' containers with the argument `driver` or `executor`,
# followed by Spark's own, and passes the rest in the environment: those start here as in Spark's own images,
# with the PySpark qmon installed as SPARK_HOME.  Any other arguments are qmon's:
# `docker run IMAGE run --bootstrap …` runs `qmon run --bootstrap …`.
set -euo pipefail

case "${1:-}" in
  driver)
    # spark-submit in client mode inside the driver's pod, bound to the pod's address
    shift
    exec tini -s -- "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
      --deploy-mode client "$@"
    ;;
  executor)
    # Spark's executor backend for Kubernetes; its Java options come as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ...
    shift
    java_options=()
    for name in $(compgen -v SPARK_JAVA_OPT_ | sort -t _ -k 4 -n); do
      java_options+=("${!name}")
    done
    classpath="${SPARK_CONF_DIR:-$SPARK_HOME/conf}:$SPARK_HOME/jars/*"
    classpath+="${SPARK_EXTRA_CLASSPATH:+:$SPARK_EXTRA_CLASSPATH}:$PWD"
    exec tini -s -- "$JAVA_HOME/bin/java" "${java_options[@]}" \
      -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" -cp "$classpath" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    exec qmon "$@"
    ;;
esac
