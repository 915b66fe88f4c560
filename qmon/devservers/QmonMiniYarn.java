// A YARN cluster in one JVM, for qmon's tests: Hadoop's MiniYARNCluster (one ResourceManager, N NodeManagers),
// driven by qmon/devservers/yarn.py through standard input and output.  Compiled by yarn.py against
// hadoop-client-minicluster; not part of the job.
//
// Arguments: --name NAME (its directory is ./target/NAME), --node-managers N, --conf KEY=VALUE (repeated),
// --dump FILE (the live configuration, written once the cluster is up).
//
// Standard output, one line each, every line starting with "qmon-yarn ":
//   conf KEY VALUE        a ResourceManager address a client needs, once the ResourceManager has bound its ports
//   ready MILLIS          the ResourceManager and every NodeManager are up (MILLIS since the start)
//   node I NODE_ID STATE CONTAINERS   the answer to "nodes" (CONTAINERS comma-separated, "-" for none)
//   app ID STATE FINAL_STATUS AM_NODE_ID   the answer to "apps" ("-" for an AM not placed yet)
//   end                   the last line of an answer to "nodes" or "apps"
//   stopped-nm I NODE_ID  NodeManager I has stopped (its containers killed, its heartbeats ended)
//   killed-app ID         the ResourceManager was asked to kill that application
//   error TEXT            a command that could not be carried out
//   stopped               the cluster has stopped
// Standard input, one command a line: "nodes", "apps", "stop-nm I", "kill-app ID", "stop".  End of input stops
// the cluster as "stop" does; so does SIGTERM (a shutdown hook).

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.protocolrecords.KillApplicationRequest;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;

public final class QmonMiniYarn {
    private static final String PREFIX = "qmon-yarn ";
    private static final Object LOCK = new Object();
    private static MiniYARNCluster cluster;
    private static int nodeManagers = 2;
    private static boolean stopped;

    private QmonMiniYarn() {}

    private static void say(String line) {
        synchronized (System.out) {
            System.out.println(PREFIX + line);
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        String name = "qmon-yarn";
        String dump = null;
        YarnConfiguration conf = new YarnConfiguration();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--name" -> name = args[++i];
                case "--node-managers" -> nodeManagers = Integer.parseInt(args[++i]);
                case "--dump" -> dump = args[++i];
                case "--conf" -> {
                    String kv = args[++i];
                    int eq = kv.indexOf('=');
                    conf.set(kv.substring(0, eq), kv.substring(eq + 1));
                }
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        long start = System.nanoTime();
        synchronized (LOCK) {
            cluster = new MiniYARNCluster(name, 1, nodeManagers, 1, 1);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(QmonMiniYarn::stopCluster, "qmon-yarn-shutdown"));
        cluster.init(conf);
        cluster.start();

        // start() can return before the ResourceManager has written the ports it bound into the configuration
        // (Spark's BaseYarnClusterSuite waits for the same thing)
        Configuration live = cluster.getConfig();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (live.get(YarnConfiguration.RM_ADDRESS, ":0").endsWith(":0")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the ResourceManager's address has no port after 30 s");
            }
            Thread.sleep(100);
        }
        if (!cluster.waitForNodeManagersToConnect(60_000)) {
            throw new IllegalStateException("the NodeManagers did not register with the ResourceManager in 60 s");
        }
        List<String> keys = new ArrayList<>(YarnConfiguration.getServiceAddressConfKeys(live));
        keys.add(YarnConfiguration.RM_HOSTNAME);
        for (String key : keys) {
            String value = live.get(key);
            if (value != null) {
                say("conf " + key + " " + value);
            }
        }
        if (dump != null) {
            try (OutputStream out = new FileOutputStream(new File(dump))) {
                live.writeXml(out);
            }
        }
        say("ready " + (System.nanoTime() - start) / 1_000_000);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words[0].isEmpty()) {
                continue;
            }
            if (words[0].equals("stop")) {
                break;
            }
            try {
                command(words);
            } catch (Exception e) {
                say("error " + words[0] + ": " + e.toString().replace('\n', ' '));
            }
        }
        stopCluster();
        System.exit(0);
    }

    private static void command(String[] words) throws Exception {
        switch (words[0]) {
            case "nodes" -> {
                for (int i = 0; i < nodeManagers; i++) {
                    NodeManager nm = cluster.getNodeManager(i);
                    List<String> containers = new ArrayList<>();
                    for (ContainerId id : nm.getNMContext().getContainers().keySet()) {
                        containers.add(id.toString());
                    }
                    say("node " + i + " " + nm.getNMContext().getNodeId() + " " + nm.getServiceState() + " "
                            + (containers.isEmpty() ? "-" : String.join(",", containers)));
                }
                say("end");
            }
            case "apps" -> {
                ResourceManager rm = cluster.getResourceManager();
                for (RMApp app : rm.getRMContext().getRMApps().values()) {
                    RMAppAttempt attempt = app.getCurrentAppAttempt();
                    String amNode = attempt == null || attempt.getMasterContainer() == null
                            ? "-" : attempt.getMasterContainer().getNodeId().toString();
                    say("app " + app.getApplicationId() + " " + app.getState() + " " + app.getFinalApplicationStatus()
                            + " " + amNode);
                }
                say("end");
            }
            case "stop-nm" -> {
                int i = Integer.parseInt(words[1]);
                NodeManager nm = cluster.getNodeManager(i);
                String nodeId = String.valueOf(nm.getNMContext().getNodeId());
                nm.stop();
                say("stopped-nm " + i + " " + nodeId);
            }
            case "kill-app" -> {
                ApplicationId id = ApplicationId.fromString(words[1]);
                cluster.getResourceManager().getClientRMService()
                        .forceKillApplication(KillApplicationRequest.newInstance(id));
                say("killed-app " + id);
            }
            default -> say("error unknown command " + words[0]);
        }
    }

    private static void stopCluster() {
        synchronized (LOCK) {
            if (stopped || cluster == null) {
                return;
            }
            stopped = true;
            try {
                cluster.stop();
            } finally {
                say("stopped");
            }
        }
    }
}
