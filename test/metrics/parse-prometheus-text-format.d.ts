declare module 'parse-prometheus-text-format' {
  interface Family {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: Array<{ labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string; sum?: string }>;
  }
  export default function parsePrometheusTextFormat(text: string): Family[];
}
