class SampleGenerator:
    def __init__(self, data, sample_count):
        self.data = data
        self.sample_count = sample_count

    def __iter__(self):
        return iter([self.data] * self.sample_count)

    def __len__(self):
        return self.sample_count
