// Kafka's own Java client (kafka-clients) for the security tests: the settings come from a
// client .properties file exactly as a Java application would pass them (security.protocol,
// sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*).
//
// One JVM serves many commands (a JVM's start costs seconds): each line on standard input is
// tab-separated,
//   <client.properties> produce <topic> <count>
//   <client.properties> consume <topic> <count> <group>
//   <client.properties> create-topic <topic>
//   <client.properties> acl-add|acl-describe|acl-delete <topic> <principal> <operation>
//       (Admin's createAcls / describeAcls / deleteAcls on a literal topic pattern, host *:
//       "OK acls <n>" with the bindings described or deleted)
//   <client.properties> produce-over <topic> <count> <interval ms>   (one record at a time,
//       then "OK reauthentications <n> connections <n>" from the producer's metrics)
// and is answered by one line: "OK <what>" on success, "ERROR <exception class> <message>"
// when the broker refused (the exception the client raised, or its cause).
import java.io.BufferedReader;
import java.io.FileReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecurityClient {
    public static void main(String[] args) throws Exception {
        BufferedReader input = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = input.readLine()) != null) {
            System.out.println(serve(line.split("\t")));
            System.out.flush();
        }
    }

    static String serve(String[] args) {
        try {
            Properties props = new Properties();
            try (FileReader reader = new FileReader(args[0])) {
                props.load(reader);
            }
            String topic = args[2];
            return switch (args[1]) {
                case "produce" -> produce(props, topic, Integer.parseInt(args[3]));
                case "consume" -> consume(props, topic, Integer.parseInt(args[3]), args[4]);
                case "create-topic" -> createTopic(props, topic);
                case "acl-add", "acl-describe", "acl-delete" -> acls(props, args[1], topic, args[3], args[4]);
                case "produce-over" ->
                        produceOver(props, topic, Integer.parseInt(args[3]), Long.parseLong(args[4]));
                default -> throw new IllegalArgumentException(args[1]);
            };
        } catch (Exception e) {
            Throwable cause = e;
            while ((cause instanceof ExecutionException || cause.getClass() == RuntimeException.class)
                    && cause.getCause() != null) {
                cause = cause.getCause();
            }
            String message = String.valueOf(cause.getMessage()).replace('\n', ' ');
            return "ERROR " + cause.getClass().getSimpleName() + " " + message;
        }
    }

    static String produce(Properties props, String topic, int count) throws Exception {
        props.putIfAbsent("acks", "all");
        props.putIfAbsent("max.block.ms", "20000");
        props.putIfAbsent("delivery.timeout.ms", "30000");
        props.putIfAbsent("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)));
            }
            for (java.util.concurrent.Future<?> future : sent) {
                future.get();
            }
        }
        return "OK produced " + count;
    }

    static String produceOver(Properties props, String topic, int count, long intervalMs)
            throws Exception {
        props.putIfAbsent("acks", "all");
        props.putIfAbsent("max.block.ms", "20000");
        props.putIfAbsent("delivery.timeout.ms", "30000");
        props.putIfAbsent("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
                Thread.sleep(intervalMs);
            }
            double reauthentications = 0;
            double connections = 0;
            for (Map.Entry<MetricName, ? extends Metric> metric : producer.metrics().entrySet()) {
                if (!metric.getKey().group().equals("producer-metrics")) {
                    continue;
                }
                Object value = metric.getValue().metricValue();
                if (!(value instanceof Double)) {
                    continue;
                }
                switch (metric.getKey().name()) {
                    case "successful-reauthentication-total" -> reauthentications += (Double) value;
                    case "connection-creation-total" -> connections += (Double) value;
                    default -> { }
                }
            }
            return "OK reauthentications " + (long) reauthentications + " connections " + (long) connections;
        }
    }

    static String consume(Properties props, String topic, int count, String group) {
        props.put("group.id", group);
        props.putIfAbsent("auto.offset.reset", "earliest");
        props.putIfAbsent("enable.auto.commit", "false");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(Collections.singletonList(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    values.add(record.value());
                }
            }
            consumer.commitSync(Duration.ofSeconds(30));
        }
        return "OK consumed " + String.join(",", values);
    }

    static String acls(Properties props, String command, String topic, String principal, String operation)
            throws Exception {
        AclBindingFilter filter = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntryFilter(principal, null, AclOperation.ANY, AclPermissionType.ANY));
        try (Admin admin = Admin.create(props)) {
            return switch (command) {
                case "acl-add" -> {
                    AclBinding binding = new AclBinding(
                            new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                            new AccessControlEntry(principal, "*", AclOperation.fromString(operation),
                                    AclPermissionType.ALLOW));
                    admin.createAcls(Collections.singletonList(binding)).all().get();
                    yield "OK acls 1";
                }
                case "acl-describe" -> "OK acls " + admin.describeAcls(filter).values().get().size();
                default -> "OK acls " + admin.deleteAcls(Collections.singletonList(filter)).all().get().size();
            };
        }
    }

    static String createTopic(Properties props, String topic) throws Exception {
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(Collections.singletonList(new NewTopic(topic, 2, (short) 1))).all().get();
            Map<String, TopicDescription> described =
                    admin.describeTopics(Collections.singletonList(topic)).allTopicNames().get();
            return "OK partitions " + described.get(topic).partitions().size();
        }
    }
}
