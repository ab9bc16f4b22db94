"""`python -m models.mobilenet --model_dir=DIR` trains configs/mobilenet/default.gin on digits."""

from models.core.main import main
from models.core.tasks.image_classification import ImageClassificationTask
from models.mobilenet import model  # noqa: F401 - registers the gin configurables

if __name__ == "__main__":
    main(ImageClassificationTask, family="mobilenet", default_recipe="mobilenet/default.gin")
